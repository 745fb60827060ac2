"""Conversations on the record (seed 003 Nexus): the people agents deal with, the events ledger of
everything that arrived from outside, and the agents ledger of what the agents made of it.

- ``Person`` and ``ChannelIdentity``: who a sender is (a phone number, an e-mail address, a chat
  handle resolves to a person, or to nobody: "unknown").
- ``LedgerEvent`` (``events_ledger``): every external event as it arrived, permanent, append-only
  and hash-chained in one stream (``brainframe/services/ledger/ledgers.py``).
- ``Thread`` → ``Turn`` → ``Message``, and ``Session`` (a stable label pointing at a thread's
  current head): the agents ledger. Each turn is sealed with a hash over its messages, its tool
  calls and its parent's hash (a Merkle chain: changing an earlier message breaks every hash after
  it). Compaction is a turn (``turn_type = compaction``); nothing is deleted.
- ``QueuedMessage``: a message that arrived while its session's agent was mid-turn, held by the
  session's queue mode. ``Delegation``: one agent handing work to another. ``LearningCard``: a
  lesson from a reviewer, scheduled by SM-2.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from .agents import Agent
from .append_only import AppendOnlyModel
from .audit import OriginRegistry


class Channel(models.TextChoices):
    SMS = "sms", "SMS"
    EMAIL = "email", "E-mail"
    CHAT = "chat", "Chat"


class QueueMode(models.TextChoices):
    """What happens to a message that arrives while the agent is mid-turn (seed 003)."""

    STEER = "steer", "Steer (delivered into the turn in progress)"
    FOLLOWUP = "followup", "Follow-up (each its own turn, after the current one)"
    COLLECT = "collect", "Collect (all waiting messages as one turn, after the current one)"
    INTERRUPT = "interrupt", "Interrupt (the current turn stops; the new message starts one)"


class Person(models.Model):
    """Someone agents deal with: staff, NDIS participants, family members and carers, suppliers."""

    class Relationship(models.TextChoices):
        STAFF = "staff", "Staff"
        PARTICIPANT = "participant", "Participant"
        FAMILY = "family", "Family member"
        CARER = "carer", "Carer"
        SUPPLIER = "supplier", "Supplier"
        OTHER = "other", "Other"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    relationship = models.CharField(max_length=12, choices=Relationship.choices)
    acts_for = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="representatives",
        help_text="The participant this person acts for (family members, carers).",
    )
    groups = ArrayField(models.CharField(max_length=60), default=list, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "persons"
        ordering = ["name"]
        verbose_name_plural = "people"

    def __str__(self) -> str:
        return f"{self.name} ({self.get_relationship_display()})"


class ChannelIdentity(models.Model):
    """How a person appears on a channel: a phone number, an e-mail address, a chat handle
    (stored normalised: ``brainframe.services.ledger.normalise_address``)."""

    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="identities")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    address = models.CharField(max_length=254)

    class Meta:
        db_table = "person_identities"
        verbose_name_plural = "channel identities"
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "address"], name="%(app_label)s_identity_one_person"
            )
        ]

    def __str__(self) -> str:
        return f"{self.channel}:{self.address}"


class LedgerEvent(AppendOnlyModel):
    """The events ledger: one external event as it arrived (never compacted, never changed)."""

    class Kind(models.TextChoices):
        MESSAGE = "message", "Message from a person"
        WEBHOOK = "webhook", "Webhook (a Type 3 agent's platform event)"
        A2A = "a2a", "A2A message"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    seq = models.BigIntegerField(unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    channel = models.CharField(max_length=16, help_text="sms, email, chat, webhook, a2a")
    adapter = models.CharField(max_length=60, blank=True, help_text="Adapter or agent it came by.")
    external_id = models.CharField(max_length=200, help_text="The provider's id for it.")
    sender = models.CharField(max_length=254, blank=True)
    person = models.ForeignKey(
        Person, on_delete=models.PROTECT, null=True, blank=True, related_name="ledger_events"
    )
    is_group = models.BooleanField(default=False)
    text = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True, help_text="As it arrived.")
    origin = models.ForeignKey(
        OriginRegistry,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="ledger_events",
        help_text="The O-Tag the event started.",
    )
    received_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    row_hash = models.CharField(max_length=64)

    class Meta:
        db_table = "events_ledger"
        ordering = ["-seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["adapter", "external_id"], name="%(app_label)s_ledger_event_once"
            )
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.channel} from {self.sender or '?'}"


class TimerTicks(models.Model):
    """The minute timer's ticks, kept as one aggregate row per hour (seed 003 timer events)."""

    hour = models.DateTimeField(primary_key=True)
    ticks = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        db_table = "events_ledger_timer_ticks"
        ordering = ["-hour"]
        verbose_name_plural = "timer ticks"

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}:00 UTC: {self.ticks} tick(s)"


class Thread(models.Model):
    """A line of turns (the bedrock of routing). A worker's thread names the delegation that
    opened it, and so its parent thread."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="threads")
    title = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="children"
    )
    head = models.ForeignKey(
        "Turn", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    turns_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "ledger_threads"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"thread {self.pk}"


class Session(models.Model):
    """A stable label (``agent:<agent>:<channel>:<address>``) pointing at a thread's head."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=300, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="sessions")
    thread = models.ForeignKey(Thread, on_delete=models.PROTECT, related_name="sessions")
    channel = models.CharField(max_length=16, blank=True)
    address = models.CharField(max_length=254, blank=True)
    adapter = models.ForeignKey(
        "brainframe.ChannelAdapter",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sessions",
    )
    person = models.ForeignKey(
        Person, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    queue_mode = models.CharField(
        max_length=10,
        choices=QueueMode.choices,
        blank=True,
        help_text="Empty: the agent's queue mode.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "ledger_sessions"
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.key


class Turn(models.Model):
    """The query and all agent activity until the answer: messages, tool calls (by id, linked to
    their R-Tags), the answer. Open while the agent works; sealed (``row_hash``) when completed,
    interrupted or written as a compaction, and never changed after (a database trigger)."""

    class Type(models.TextChoices):
        NORMAL = "normal", "Normal"
        COMPACTION = "compaction", "Compaction"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        COMPLETED = "completed", "Completed"
        INTERRUPTED = "interrupted", "Interrupted"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.PROTECT, related_name="turns")
    seq = models.PositiveIntegerField()
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    parent_hash = models.CharField(max_length=64)
    turn_type = models.CharField(max_length=10, choices=Type.choices, default=Type.NORMAL)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="turns")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="turns"
    )
    origin = models.ForeignKey(
        OriginRegistry,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="turns",
        help_text="The O-Tag the turn's tool calls carry.",
    )
    task = models.ForeignKey(
        "brainframe.AgentTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="turns",
    )
    channel_context = models.JSONField(
        default=dict, blank=True, help_text="The delivery channel and its capabilities."
    )
    answer = models.TextField(blank=True)
    tool_calls = ArrayField(models.UUIDField(), default=list, blank=True)
    summary = models.TextField(blank=True)
    summarised_through = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    first_kept = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    interrupted_by = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    row_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        db_table = "ledger_turns"
        ordering = ["thread_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="%(app_label)s_turn_seq"),
            # One turn in progress per thread.
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status="open"),
                name="%(app_label)s_one_open_turn",
            ),
        ]
        indexes = [
            models.Index(fields=["origin"], name="ledger_turns_origin_idx"),
            models.Index(fields=["agent", "-started_at"], name="ledger_turns_agent_idx"),
            # The checkpoint job: the threads whose turns were sealed since the last checkpoint.
            models.Index(fields=["completed_at"], name="ledger_turns_completed_idx"),
        ]

    def __str__(self) -> str:
        return f"turn {self.seq} of {self.thread_id}"


class Message(AppendOnlyModel):
    """One message of a turn, written once (the query, a steer, the agent's words, the answer)."""

    class Role(models.TextChoices):
        USER = "user", "Person"
        STEER = "steer", "Person, while the agent worked"
        AGENT = "agent", "Agent"
        ANSWER = "answer", "Answer"
        SYSTEM = "system", "System"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=8, choices=Role.choices)
    person = models.ForeignKey(
        Person, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    author = models.CharField(max_length=120, blank=True, help_text="agent:<id>, a sender, …")
    content = models.TextField()
    event = models.ForeignKey(
        LedgerEvent, on_delete=models.PROTECT, null=True, blank=True, related_name="messages"
    )
    created_at = models.DateTimeField()
    content_hash = models.CharField(max_length=64)

    class Meta:
        db_table = "ledger_messages"
        ordering = ["turn_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "seq"], name="%(app_label)s_message_seq")
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class QueuedMessage(models.Model):
    """A message that arrived while its session's turn was in progress (followup / collect),
    until the turn that takes it starts."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="queued")
    event = models.ForeignKey(LedgerEvent, on_delete=models.PROTECT, null=True, blank=True)
    person = models.ForeignKey(
        Person, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author = models.CharField(max_length=120, blank=True)
    content = models.TextField()
    mode = models.CharField(max_length=10, choices=QueueMode.choices)
    queued_at = models.DateTimeField(auto_now_add=True)
    taken_by = models.ForeignKey(
        Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        db_table = "ledger_queue"
        ordering = ["queued_at", "id"]

    def __str__(self) -> str:
        return f"{self.mode}: {self.content[:60]}"


class Delegation(models.Model):
    """A manager agent handing work to a worker through ``agents.delegate`` (a governed call):
    the worker's task and thread, and the depth of the chain of managers above it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    manager = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="delegated")
    worker = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="delegations")
    call = models.OneToOneField(
        "brainframe.ToolCall", on_delete=models.PROTECT, related_name="delegation"
    )
    task = models.OneToOneField(
        "brainframe.AgentTask", on_delete=models.PROTECT, related_name="delegation"
    )
    thread = models.ForeignKey(Thread, on_delete=models.PROTECT, related_name="delegations")
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="children"
    )
    depth = models.PositiveSmallIntegerField()
    instructions = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "delegations"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.manager_id} → {self.worker_id} (depth {self.depth})"


class LearningCard(models.Model):
    """A lesson from a reviewer's rejection or modification (seed 001 learning cards), shown in
    the agent's context when due; SM-2 schedules it, graded by the agent's later calls."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="learning_cards")
    tool_id = models.CharField(max_length=120)
    lesson = models.TextField()
    approval = models.ForeignKey(
        "brainframe.ApprovalRequest",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="learning_cards",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    easiness = models.FloatField(default=2.5)
    interval_days = models.PositiveIntegerField(default=0)
    repetitions = models.PositiveIntegerField(default=0)
    due_at = models.DateTimeField()
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    last_grade = models.PositiveSmallIntegerField(null=True, blank=True)
    reviews = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "learning_cards"
        ordering = ["due_at"]
        indexes = [
            models.Index(fields=["agent", "active", "due_at"], name="learning_cards_due_idx")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.tool_id}: {self.lesson[:60]}"
