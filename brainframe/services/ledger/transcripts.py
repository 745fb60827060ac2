"""Reading the agents ledger (docs/ledgers.md): a turn as the API and MCP answer it, and what a
thread shows the agent's model (the last compaction's summary and the turns kept after it)."""

from __future__ import annotations

from typing import Any

from brainframe.models import Thread, Turn


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
