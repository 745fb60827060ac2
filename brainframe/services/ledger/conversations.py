"""Conversations: messages from people over a channel, the sessions they land in, the queue modes
for a message that arrives mid-turn, and the turns agents write (channels in
``brainframe/services/ledger/channels.py``, delegation in
``brainframe/services/work/delegation.py``).

A channel adapter (``ChannelAdapter``: SMS, e-mail, chat; a provider posts each message to
``/api/v1/channels/<name>/``) normalises the message, resolves its sender to a person (or
"unknown"), keeps it in the events ledger with a new O-Tag, assesses its text with the Guardian,
and hands it to the adapter's agent in the session ``agent:<agent>:<channel>:<address>``:

- no turn in progress: a turn opens with the message as its query, and a task in the agent's
  inbox names it (``payload.turn_id``); the agent answers by completing the turn;
- a turn in progress, by the session's queue mode (else the agent's ``config["queue_mode"]``,
  else ``RABS_QUEUE_MODE``): ``steer`` adds it to the turn in progress (the agent reads it from
  the turn); ``followup`` holds it until the turn ends, then it opens the next turn;
  ``collect`` holds it, and every held message opens one turn together when the turn ends;
  ``interrupt`` ends the turn in progress (interrupted, its task cancelled) and opens a new one.
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from brainframe.events import (
    Compacted,
    Event,
    MessageReceived,
    emit,
)
from brainframe.models import (
    Agent,
    AgentTask,
    ChannelAdapter,
    LedgerEvent,
    OriginRegistry,
    Person,
    QueuedMessage,
    QueueMode,
    Session,
    Thread,
    Turn,
)
from brainframe.safety.guardian.acts import rights_from_tools
from brainframe.safety.guardian.core import assess
from brainframe.services.access.acl import acl_for, principal_of
from brainframe.services.ledger.channels import channel_context, message_parse
from brainframe.services.ledger.ledgers import (
    LedgerRefusal,
    ledger_event_append,
    ledger_unit,
    normalise_address,
    person_resolve,
)
from brainframe.services.ledger.turns import (
    MessageSpec,
    _message_append,
    compaction_write,
    thread_create,
    turn_complete,
    turn_ended_event,
    turn_interrupt,
    turn_open,
)
from brainframe.services.ledger.whole_turns import turn_record
from brainframe.services.memory.indexing import classify_origin_after_commit

# --- sessions and queue modes -------------------------------------------------------------------


def session_for(
    *,
    agent: Agent,
    channel: str,
    address: str,
    adapter: ChannelAdapter | None = None,
    person: Person | None = None,
) -> Session:
    key = f"agent:{agent.agent_id}:{channel}:{address}"
    # One message of a session at a time, from its first: the session, its open turn and its
    # queue are decided under this lock (held to the end of the caller's transaction).
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
    session = Session.objects.select_for_update().filter(key=key).first()
    if session is None:
        title = f"{channel} with {person.name if person else address}"
        session = Session.objects.create(
            key=key,
            agent=agent,
            thread=thread_create(agent=agent, title=title),
            channel=channel,
            address=address,
            adapter=adapter,
            person=person,
        )
    return session


def queue_mode_of(session: Session) -> str:
    mode = session.queue_mode or (session.agent.config or {}).get("queue_mode")
    if mode not in QueueMode.values:
        mode = settings.RABS_QUEUE_MODE
    return str(mode)


def _task_for_turn(turn: Turn, *, title: str, text: str) -> AgentTask:
    task = AgentTask.objects.create(
        agent=turn.agent,
        title=title[:200],
        payload={
            "turn_id": str(turn.pk),
            "thread_id": str(turn.thread_id),
            "session": turn.session.key if turn.session else None,
            "channel_context": turn.channel_context,
            "description": text,
            # what the agent's mode selection reads (agents_vm.loop.modes)
            "query": text,
            "channel": turn.channel_context.get("channel", "text"),
        },
        o_tag=turn.origin,
    )
    Turn.objects.filter(pk=turn.pk).update(task=task)
    turn.task = task
    return task


def _session_turn(
    session: Session, query: list[MessageSpec], origin: OriginRegistry | None
) -> tuple[Turn, list[Event]]:
    """Open the session's next turn with ``query`` and put its task in the agent's inbox."""
    turn = turn_open(
        thread=session.thread,
        agent=session.agent,
        query=query,
        session=session,
        origin=origin,
        channel_context=channel_context(session.channel, session.adapter),
    )
    who = session.person.name if session.person else session.address
    _task_for_turn(
        turn,
        title=f"Answer {who} on {session.channel}",
        text="\n\n".join(spec.content for spec in query),
    )
    return turn, []  # its conversation:turn_started is written with it


def _open_turn(session: Session) -> Turn | None:
    return (
        Turn.objects.select_for_update()
        .filter(thread_id=session.thread_id, status=Turn.Status.OPEN)
        .first()
    )


def deliver(
    session: Session, spec: MessageSpec, origin: OriginRegistry | None
) -> tuple[str, Turn | None, list[Event]]:
    """Hand one message to its session: (how it was handled, the turn it is in, events)."""
    current = _open_turn(session)
    if current is None:
        turn, events = _session_turn(session, [spec], origin)
        return "turn", turn, events
    mode = queue_mode_of(session)
    if mode == QueueMode.STEER:
        _message_append(
            current, MessageSpec("steer", spec.content, spec.author, spec.person, spec.event)
        )
        return "steer", current, []
    if mode == QueueMode.INTERRUPT:
        turn_interrupt(current)
        if current.task_id:
            AgentTask.objects.filter(pk=current.task_id).exclude(
                status__in=[AgentTask.Status.DONE, AgentTask.Status.FAILED]
            ).update(
                status=AgentTask.Status.CANCELLED, failure_reason="interrupted by a newer message"
            )
        turn, events = _session_turn(session, [spec], origin)
        return "interrupt", turn, [turn_ended_event(current), *events]
    QueuedMessage.objects.create(
        session=session,
        event=spec.event,
        person=spec.person,
        author=spec.author,
        content=spec.content,
        mode=mode,
    )
    return mode, current, []


def queue_drain(session: Session) -> list[Event]:
    """After a turn ends: the held messages open the next turn (followup: the oldest alone;
    collect: all of them together)."""
    waiting = list(
        QueuedMessage.objects.select_for_update(of=("self",))
        .filter(session=session, taken_by__isnull=True)
        .select_related("event", "person")
        .order_by("queued_at", "id")
    )
    if not waiting or _open_turn(session) is not None:
        return []
    take = waiting if queue_mode_of(session) == QueueMode.COLLECT else waiting[:1]
    query = [MessageSpec("user", q.content, q.author, q.person, q.event) for q in take]
    origin = take[0].event.origin if take[0].event is not None else None
    turn, events = _session_turn(session, query, origin)
    QueuedMessage.objects.filter(pk__in=[q.pk for q in take]).update(taken_by=turn)
    return events


# --- inbound messages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MessageResult:
    event: LedgerEvent
    created: bool
    handled: str
    session: Session | None
    turn: Turn | None
    person: Person | None


def message_receive(adapter: ChannelAdapter, payload: Any) -> MessageResult:
    """One message from a channel provider: kept, resolved, assessed, decided by the ACL
    (docs/access.md), handed to the agent the ACL routes it to (else the adapter's).
    Idempotent on the provider's message id (a redelivery answers with the first result)."""
    message = message_parse(adapter.channel, payload)
    person = person_resolve(adapter.channel, message.sender)
    sender = normalise_address(adapter.channel, message.sender)
    principal = principal_of(
        person, channel=adapter.channel, sender=sender, is_group=message.is_group
    )
    principal["hour"] = timezone.localtime().hour
    events: list[Event] = []
    with transaction.atomic():
        existing = LedgerEvent.objects.filter(
            adapter=adapter.name, external_id=message.external_id
        ).first()
        if existing is not None:
            first = Turn.objects.filter(messages__event=existing).first()
            return MessageResult(existing, False, "duplicate", None, first, existing.person)
        acl = acl_for(principal)
        agent = adapter.agent
        if acl.allows and acl.route_to and acl.route_to != agent.agent_id:
            agent = Agent.objects.get(pk=acl.route_to)
        # A request to act in the message (pay, change bank details, send data outward…) is
        # judged by what the sender's ACL permissions let them ask for, not by trust alone.
        # An unknown sender is vouched for by nobody, whatever a policy lets its messages reach.
        known = acl.allows and person is not None
        rights = rights_from_tools(acl.tools) if known else frozenset()
        assessment = assess(
            message.text,
            trust="standard" if person else "untrusted",
            source=adapter.channel,
            rights=rights,
        )
        origin = OriginRegistry.objects.create(
            origin_type=adapter.channel,
            source_ref=f"{adapter.name}:{message.external_id}",
            metadata={
                "channel": adapter.channel,
                "sender": sender,
                "person": str(person.pk) if person else None,
                "is_group": message.is_group,
                "text": message.text,
                "guardian": assessment.as_dict(),
                "acl": acl.as_dict(),
            },
            principal=principal,
            registered_by=agent,
        )
        event, _ = ledger_event_append(
            kind=LedgerEvent.Kind.MESSAGE,
            channel=adapter.channel,
            adapter=adapter.name,
            external_id=message.external_id,
            sender=sender,
            person=person,
            is_group=message.is_group,
            text=message.text,
            payload=payload,
            origin=origin,
        )
        session: Session | None = None
        turn: Turn | None = None
        if not acl.allows:
            # Kept in the events ledger with the ACL's answer; no agent hears of it.
            handled = "acl_denied"
        else:
            address = (
                normalise_address(adapter.channel, message.conversation)
                if message.conversation
                else sender
            )
            session = session_for(
                agent=agent,
                channel=adapter.channel,
                address=address,
                adapter=adapter,
                person=None if message.is_group else person,
            )
            if assessment.action == "block":
                handled = "blocked"
            else:
                spec = MessageSpec(
                    "user",
                    message.text,
                    author=person.name if person else sender,
                    person=person,
                    event=event,
                )
                handled, turn, events = deliver(session, spec, origin)
        events.insert(
            0,
            MessageReceived(
                event_id=str(event.pk),
                channel=adapter.channel,
                agent_id=agent.agent_id,
                session_id=str(session.pk) if session else "",
                handled=handled,
                known_sender=person is not None,
                person_id=str(person.pk) if person else None,
                turn_id=str(turn.pk) if turn else None,
                thread_id=str(session.thread_id) if session else None,
                o_tag=str(origin.pk),
                acl_policy=acl.policy,
            ),
        )
        emit(*events)
        classify_origin_after_commit(origin.id)
    return MessageResult(event, True, handled, session, turn, person)


# --- turns the agent writes ---------------------------------------------------------------------


def _thread_and_task(
    agent: Agent, thread_id: uuid.UUID | None, title: str, task_id: uuid.UUID | None
) -> tuple[Thread, AgentTask | None]:
    """The agent's task (if named) and thread: the one named (checked as the agent's when its
    turn is written) or a new one."""
    task = None
    if task_id is not None:
        task = AgentTask.objects.filter(pk=task_id, agent=agent).first()
        if task is None:
            raise LedgerRefusal(404, "unknown_task", "no such task in your inbox", field="task_id")
    if thread_id is not None:
        return Thread(pk=thread_id, agent=agent), task
    return thread_create(agent=agent, title=title or (task.title if task else "")), task


def _origin_of(task: AgentTask | None) -> OriginRegistry | None:
    return OriginRegistry(pk=task.o_tag_id) if task is not None and task.o_tag_id else None


def turn_begin(
    *,
    agent: Agent,
    text: str,
    thread_id: uuid.UUID | None = None,
    title: str = "",
    task_id: uuid.UUID | None = None,
    channel: str = "",
) -> Turn:
    """A turn the agent starts itself (a task it works on, a scheduled job): in ``thread_id``
    (one of its own) or a new thread; the task's O-Tag is the turn's."""
    with ledger_unit():
        thread, task = _thread_and_task(agent, thread_id, title, task_id)
        return turn_open(
            thread=thread,
            agent=agent,
            query=[MessageSpec("user", text, author=f"agent:{agent.agent_id}")],
            origin=_origin_of(task),
            task=task,
            channel_context=channel_context(channel) if channel else {},
        )


def turn_append(
    *,
    agent: Agent,
    text: str,
    answer: str,
    tool_calls: list[uuid.UUID],
    notes: list[str] | None = None,
    thread_id: uuid.UUID | None = None,
    title: str = "",
    task_id: uuid.UUID | None = None,
    channel: str = "",
) -> Turn:
    """A whole turn the agent records once it is over: its query, its notes, the tool calls it
    made, the answer (``turn_record``)."""
    author = f"agent:{agent.agent_id}"
    # In a thread of the agent's: no transaction of its own (turn_record's write is one
    # statement). A new thread is made in the same transaction as its first turn.
    with ledger_unit() if thread_id is None else nullcontext():
        thread, task = _thread_and_task(agent, thread_id, title, task_id)
        return turn_record(
            thread=thread,
            agent=agent,
            query=[
                MessageSpec("user", text, author=author),
                *(MessageSpec("agent", note, author=author) for note in notes or ()),
            ],
            answer=answer,
            tool_calls=tool_calls,
            origin=_origin_of(task),
            task=task,
            channel_context=channel_context(channel) if channel else {},
        )


def turn_finish(
    *, turn_id: uuid.UUID, agent: Agent, answer: str, tool_calls: list[uuid.UUID]
) -> Turn:
    """The agent's answer: the turn sealed, then whatever its session held opens the next."""
    with ledger_unit():
        turn = turn_complete(turn_id=turn_id, agent=agent, answer=answer, tool_calls=tool_calls)
        events: list[Event] = []  # its conversation:turn_ended is written with it
        if turn.session_id:
            session = (
                Session.objects.select_for_update(of=("self",))
                .select_related("agent", "adapter", "person", "thread")
                .get(pk=turn.session_id)
            )
            events.extend(queue_drain(session))
        emit(*events)
    return turn


def compact(
    *,
    thread_id: uuid.UUID,
    agent: Agent,
    summary: str,
    summarised_through: uuid.UUID,
    first_kept: uuid.UUID | None,
) -> Turn:
    with transaction.atomic():
        turn = compaction_write(
            thread_id=thread_id,
            agent=agent,
            summary=summary,
            summarised_through=summarised_through,
            first_kept=first_kept,
        )
        emit(
            Compacted(
                turn_id=str(turn.pk),
                thread_id=str(turn.thread_id),
                agent_id=agent.agent_id,
                seq=turn.seq,
                turn_type=turn.turn_type,
                status=turn.status,
            )
        )
    return turn
