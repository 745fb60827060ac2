"""Writing the agents ledger (docs/ledgers.md): threads, turns opened with their query, messages
added while the agent works, turns completed, interrupted or written as compactions (sealed with
their Merkle hash: ``brainframe.services.ledger``), and what a thread shows the agent's model."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from brainframe.models import (
    Agent,
    AgentTask,
    LedgerEvent,
    Message,
    OriginRegistry,
    Person,
    Session,
    Thread,
    ToolCall,
    Turn,
)
from brainframe.services.ledger import GENESIS, LedgerRefusal, _seal, message_hash

# --- agents ledger: writing ---------------------------------------------------------------------


@dataclass(frozen=True)
class MessageSpec:
    role: str
    content: str
    author: str = ""
    person: Person | None = None
    event: LedgerEvent | None = None


def _message_write(turn: Turn, seq: int, spec: MessageSpec) -> Message:
    row: dict[str, Any] = {
        "turn_id": turn.pk,
        "seq": seq,
        "role": spec.role,
        "person_id": spec.person.pk if spec.person else None,
        "author": spec.author,
        "content": spec.content,
        "event_id": spec.event.pk if spec.event else None,
        "created_at": timezone.now(),
    }
    return Message.objects.create(content_hash=message_hash(row), **row)


def thread_create(*, agent: Agent, title: str = "", parent: Thread | None = None) -> Thread:
    return Thread.objects.create(agent=agent, title=title[:200], parent=parent)


def turn_open(
    *,
    thread: Thread,
    agent: Agent,
    query: list[MessageSpec],
    session: Session | None = None,
    origin: OriginRegistry | None = None,
    task: AgentTask | None = None,
    channel_context: dict[str, Any] | None = None,
) -> Turn:
    """Open the thread's next turn with its query. Refused while another turn of the thread is
    open (``turn_in_progress``)."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread.pk)
        if Turn.objects.filter(thread=thread, status=Turn.Status.OPEN).exists():
            raise LedgerRefusal(
                409, "turn_in_progress", "the thread has a turn in progress", field="thread"
            )
        parent = thread.head
        turn = Turn.objects.create(
            thread=thread,
            seq=thread.turns_count + 1,
            parent=parent,
            parent_hash=parent.row_hash if parent is not None else GENESIS,
            agent=agent,
            session=session,
            origin=origin,
            task=task,
            channel_context=channel_context or {},
        )
        for seq, spec in enumerate(query, start=1):
            _message_write(turn, seq, spec)
        Thread.objects.filter(pk=thread.pk).update(head=turn, turns_count=F("turns_count") + 1)
    return turn


def _open_turn_for(turn_id: uuid.UUID, agent: Agent) -> Turn:
    turn = Turn.objects.select_for_update().filter(pk=turn_id, agent=agent).first()
    if turn is None:
        raise LedgerRefusal(404, "unknown_turn", "no such turn of yours", field="turn")
    if turn.status == Turn.Status.INTERRUPTED:
        raise LedgerRefusal(
            409,
            "turn_interrupted",
            "a newer message interrupted this turn; answer the turn that replaced it",
            field="turn",
        )
    if turn.status != Turn.Status.OPEN:
        raise LedgerRefusal(409, "turn_closed", "the turn is already complete", field="turn")
    return turn


def message_add(*, turn_id: uuid.UUID, agent: Agent, spec: MessageSpec) -> Message:
    """Add a message to an open turn (the agent's own notes, a steering message)."""
    with transaction.atomic():
        turn = _open_turn_for(turn_id, agent)
        return _message_append(turn, spec)


def _message_append(turn: Turn, spec: MessageSpec) -> Message:
    last = Message.objects.filter(turn=turn).order_by("-seq").values_list("seq", flat=True).first()
    return _message_write(turn, (last or 0) + 1, spec)


def _tool_calls_of(agent: Agent, call_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    unique = list(dict.fromkeys(call_ids))
    found = set(ToolCall.objects.filter(pk__in=unique, agent=agent).values_list("id", flat=True))
    missing = [str(c) for c in unique if c not in found]
    if missing:
        raise LedgerRefusal(
            400,
            "unknown_tool_calls",
            f"not tool calls of yours: {', '.join(missing[:5])}",
            field="tool_calls",
        )
    return unique


def turn_complete(
    *, turn_id: uuid.UUID, agent: Agent, answer: str, tool_calls: list[uuid.UUID]
) -> Turn:
    """Seal an open turn with its answer and the tool calls it made (the agent's own calls)."""
    with transaction.atomic():
        turn = _open_turn_for(turn_id, agent)
        turn.tool_calls = _tool_calls_of(agent, tool_calls)
        turn.answer = answer
        if answer:
            _message_append(turn, MessageSpec("answer", answer, author=f"agent:{agent.agent_id}"))
        return _seal(turn, Turn.Status.COMPLETED)


def turn_interrupt(turn: Turn, *, by: Turn | None = None) -> Turn:
    """Seal an open turn as interrupted (the caller holds its row lock)."""
    turn.interrupted_by = by
    return _seal(turn, Turn.Status.INTERRUPTED)


def compaction_write(
    *,
    thread_id: uuid.UUID,
    agent: Agent,
    summary: str,
    summarised_through: uuid.UUID,
    first_kept: uuid.UUID | None,
) -> Turn:
    """A compaction turn (seed 003 COMPACTION): the summary of every turn up to
    ``summarised_through``, and the first turn kept whole after it. It points at the thread's
    head like any turn; later turns point at it; nothing is deleted."""
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=thread_id, agent=agent).first()
        if thread is None:
            raise LedgerRefusal(404, "unknown_thread", "no such thread of yours", field="thread")
        if Turn.objects.filter(thread=thread, status=Turn.Status.OPEN).exists():
            raise LedgerRefusal(
                409, "turn_in_progress", "compact between turns, not during one", field="thread"
            )
        through = Turn.objects.filter(pk=summarised_through, thread=thread).first()
        if through is None:
            raise LedgerRefusal(
                400,
                "unknown_turn",
                "summarised_through must be a turn of this thread",
                field="summarised_through",
            )
        kept = None
        if first_kept is not None:
            kept = Turn.objects.filter(pk=first_kept, thread=thread).first()
            if kept is None or kept.seq <= through.seq:
                raise LedgerRefusal(
                    400,
                    "invalid_first_kept",
                    "first_kept must be a turn of this thread after summarised_through",
                    field="first_kept",
                )
        parent = thread.head
        turn = Turn.objects.create(
            thread=thread,
            seq=thread.turns_count + 1,
            parent=parent,
            parent_hash=parent.row_hash if parent is not None else GENESIS,
            agent=agent,
            turn_type=Turn.Type.COMPACTION,
            summary=summary,
            summarised_through=through,
            first_kept=kept,
        )
        _seal(turn, Turn.Status.COMPLETED)
        Thread.objects.filter(pk=thread.pk).update(head=turn, turns_count=F("turns_count") + 1)
    return turn


def thread_context(thread: Thread) -> dict[str, Any]:
    """What the agent's model sees of a thread: the latest compaction's summary, then every turn
    from its first kept turn on (or the whole thread when it was never compacted)."""
    compaction = (
        Turn.objects.filter(thread=thread, turn_type=Turn.Type.COMPACTION).order_by("-seq").first()
    )
    turns = Turn.objects.filter(thread=thread, turn_type=Turn.Type.NORMAL).order_by("seq")
    if compaction is not None:
        start = compaction.first_kept.seq if compaction.first_kept else compaction.seq
        turns = turns.filter(seq__gte=start)
    turns = turns.prefetch_related("messages")
    return {
        "thread": str(thread.pk),
        "summary": compaction.summary if compaction else "",
        "compaction": str(compaction.pk) if compaction else None,
        "turns": [turn_as_dict(t) for t in turns],
    }


def turn_as_dict(turn: Turn, *, messages: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "turn_id": str(turn.pk),
        "thread": str(turn.thread_id),
        "seq": turn.seq,
        "turn_type": turn.turn_type,
        "status": turn.status,
        "agent": turn.agent_id,
        "session": str(turn.session_id) if turn.session_id else None,
        "o_tag": str(turn.origin_id) if turn.origin_id else None,
        "task_id": str(turn.task_id) if turn.task_id else None,
        "channel_context": turn.channel_context,
        "answer": turn.answer,
        "tool_calls": [str(c) for c in turn.tool_calls],
        "parent_hash": turn.parent_hash,
        "hash": turn.row_hash or None,
        "started_at": turn.started_at.isoformat() if turn.started_at else None,
        "completed_at": turn.completed_at.isoformat() if turn.completed_at else None,
    }
    if turn.turn_type == Turn.Type.COMPACTION:
        body["summary"] = turn.summary
        body["summarised_through"] = str(turn.summarised_through_id)
        body["first_kept"] = str(turn.first_kept_id) if turn.first_kept_id else None
    if turn.interrupted_by_id:
        body["interrupted_by"] = str(turn.interrupted_by_id)
    if messages:
        body["messages"] = [
            {
                "seq": m.seq,
                "role": m.role,
                "author": m.author,
                "person": str(m.person_id) if m.person_id else None,
                "content": m.content,
                "event": str(m.event_id) if m.event_id else None,
                "at": m.created_at.isoformat(),
            }
            for m in sorted(turn.messages.all(), key=lambda m: m.seq)
        ]
    return body
