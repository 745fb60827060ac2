"""The one list of event types, and the bus: publishing to open boards, keeping in the log."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from datetime import datetime
from typing import Any

from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.utils import timezone

from brainframe.models import ToolCall
from brainframe.telemetry import events_observed

from .base import BOARD_GROUP, Event, agent_group
from .board import (
    AgentChanged,
    AgentStatusChanged,
    ApprovalCreated,
    ApprovalDecided,
    ApprovalEscalated,
    ApprovalExpired,
    CouncilChanged,
    GuardianAssessmentComplete,
    Heartbeat,
    LevelChanged,
    ModelToolCallFlagged,
    SecurityThreatDetected,
    TaskChanged,
    ToolCallChanged,
)
from .conversations import (
    ChatPosted,
    Compacted,
    Delegated,
    DeliveryChanged,
    LoopLatched,
    MessageReceived,
    TurnEnded,
    TurnStarted,
    TurnYielded,
)
from .records import (
    AlignmentSnapshotted,
    CallBlocked,
    ChainRefused,
    CoreResponse,
    CoreRoute,
    Escalated,
    HookDisabled,
    HookEnabled,
    HookEvaluated,
    HookFailed,
    HookFired,
    HookProposed,
    HookReviewed,
    InboundReceived,
    MemoryRecorded,
    PlanFailed,
    PlanSaved,
    PolicyChanged,
    RuleViolated,
    ShadowDecision,
    ShareDecided,
    StepFinished,
    StepStarted,
    ToolExecuted,
    ToolFailed,
)

log = logging.getLogger(__name__)


#: Every event type by name: the one list of what the product emits.
EVENT_TYPES: dict[str, type[Event]] = {
    cls.NAME: cls
    for cls in (
        ToolCallChanged,
        ApprovalCreated,
        ApprovalDecided,
        ApprovalEscalated,
        ApprovalExpired,
        TaskChanged,
        Heartbeat,
        LevelChanged,
        AgentChanged,
        AgentStatusChanged,
        GuardianAssessmentComplete,
        SecurityThreatDetected,
        ModelToolCallFlagged,
        CouncilChanged,
        ToolExecuted,
        ToolFailed,
        CallBlocked,
        ChainRefused,
        RuleViolated,
        ShadowDecision,
        ShareDecided,
        Escalated,
        PolicyChanged,
        PlanSaved,
        StepStarted,
        StepFinished,
        PlanFailed,
        CoreRoute,
        CoreResponse,
        MemoryRecorded,
        AlignmentSnapshotted,
        InboundReceived,
        HookProposed,
        HookReviewed,
        HookEnabled,
        HookDisabled,
        HookEvaluated,
        HookFired,
        HookFailed,
        MessageReceived,
        TurnStarted,
        TurnEnded,
        Compacted,
        Delegated,
        DeliveryChanged,
        ChatPosted,
        TurnYielded,
        LoopLatched,
    )
}

#: The families, as the board's feed and the sinks offer them.
EVENT_FAMILIES: tuple[str, ...] = tuple(
    sorted({cls.family() for cls in EVENT_TYPES.values() if cls.LOGGED})
)


def event_from_wire(item: dict[str, Any]) -> Event | None:
    """The typed event of one item of a channel-layer message (None: a name nobody defines, or
    a payload that does not fit it; such an item is logged and skipped)."""
    cls = EVENT_TYPES.get(item.get("event", ""))
    if cls is None:
        log.warning("unknown event %r", item.get("event"))
        return None
    payload = dict(item.get("payload") or {})
    for name in ("patterns", "steps", "effects"):  # JSON has no tuples
        if isinstance(payload.get(name), list):
            payload[name] = tuple(payload[name])
    try:
        return cls(**payload)
    except TypeError as exc:
        log.warning("event %s with a payload that does not fit it: %s", cls.NAME, exc)
        return None


# --- The bus ---------------------------------------------------------------------------------
_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
#: Most publishes in one channel-layer message (more go in the next, in order).
BATCH_PUBLISHES = 100
#: How long the sender waits after a send before it sends again or stops (seconds). An event
#: that finds no sender running goes at once; one published within this time of the last send
#: waits at most this long, and goes with everything else published meanwhile.
LINGER_SECONDS = 0.01


def _publisher_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="board-events", daemon=True).start()
            _loop = loop
        return _loop


def _log_failure(future: Future[Any]) -> None:
    exc = future.exception()
    if exc is not None:
        log.warning("could not publish a board event: %s", exc)


class _Outbox:
    """What this process has yet to send to the boards, in order, and whether a sender runs.

    One sender at a time on the publisher's loop takes everything queued so far and sends it as
    one message, then waits ``LINGER_SECONDS``; what was queued meanwhile goes in the next, and
    when nothing was, the sender stops. At a few calls a second every publish is sent on its
    own, at once; at hundreds, a process sends about once per linger, whatever it published
    meanwhile in one message: a group send costs the channel layer two to four Redis round
    trips (and this process a loop wake-up) whatever it carries."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queued: list[tuple[list[dict[str, Any]], Future[Any]]] = []
        self.sending = False

    def put(self, items: list[dict[str, Any]], layer: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self.lock:
            self.queued.append((items, future))
            start = not self.sending
            self.sending = True
        if start:
            try:
                asyncio.run_coroutine_threadsafe(self._send(layer), _publisher_loop())
            except RuntimeError as exc:  # interpreter shutting down: nothing queued can go
                with self.lock:
                    left, self.queued, self.sending = self.queued, [], False
                for _, queued in left:
                    queued.set_exception(exc)
        return future

    async def _send(self, layer: Any) -> None:
        batch: list[tuple[list[dict[str, Any]], Future[Any]]] = []
        try:
            while True:
                with self.lock:
                    batch = self.queued[:BATCH_PUBLISHES]
                    del self.queued[: len(batch)]
                    if not batch:
                        self.sending = False
                        return
                events = [item for items, _ in batch for item in items]
                try:
                    await layer.group_send(BOARD_GROUP, {"type": "board.events", "events": events})
                    for group, about in _agent_events(events).items():
                        await layer.group_send(group, {"type": "agent.events", "events": about})
                except Exception as exc:  # each publisher of the batch is told; the next goes on
                    for _, future in batch:
                        future.set_exception(exc)
                else:
                    for _, future in batch:
                        future.set_result(None)
                batch = []
                await asyncio.sleep(LINGER_SECONDS)  # what is published meanwhile goes together
        except BaseException as exc:  # cancelled (the loop is going away): fail what is left
            with self.lock:
                left, self.queued, self.sending = batch + self.queued, [], False
            for _, future in left:
                if not future.done():
                    future.set_exception(exc)
            raise


_outbox = _Outbox()

#: The events also sent to their agent's group (``agent_group``): what an agent's open MCP
#: sessions are told of (its calls held, decided, expired). Few: not one per call.
AGENT_EVENTS = frozenset(
    cls.NAME for cls in (ApprovalCreated, ApprovalDecided, ApprovalEscalated, ApprovalExpired)
)


def _agent_events(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for item in events:
        if item.get("event") in AGENT_EVENTS:
            agent_id = str(item.get("payload", {}).get("agent_id", ""))
            grouped.setdefault(agent_group(agent_id), []).append(item)
    return grouped


def publish(*events: Event) -> Future[Any] | None:
    """Queue ``events``, in order, for every open board, in one message (a tool call's
    Guardian assessment with its row), batched with what other threads of this process publish
    meanwhile (``_Outbox``). Returns the pending send (tests may wait on it)."""
    events_observed(events)
    layer = get_channel_layer()
    if layer is None or not events:
        return None
    future = _outbox.put([event.wire() for event in events], layer)
    future.add_done_callback(_log_failure)
    return future


def publish_after_commit(*events: Event) -> None:
    """``publish`` once the current transaction commits (at once outside one): for events
    whose rows the board reads to show them."""
    transaction.on_commit(lambda: publish(*events))


def emit(*events: Event) -> None:
    """Keep ``events`` in the event log (those it keeps: ``LOGGED``) and publish them.

    The log rows are written by one statement in the caller's transaction (its own outside
    one): they exist if and only if what they describe was committed. They are published once
    it commits. A failure to write them is the caller's failure (the log is not best effort)."""
    append_events(events)
    publish_after_commit(*events)


#: Functions that keep the materialized views current from appended rows (registered at
#: start-up: ``brainframe.services.eventlog.views``), called in the appending transaction.
_projectors: list[Callable[[list[dict[str, Any]]], None]] = []


def projector_register(projector: Callable[[list[dict[str, Any]]], None]) -> None:
    if projector not in _projectors:
        _projectors.append(projector)


def append_events(events: Sequence[Event], at: datetime | None = None) -> int:
    """Append the logged ones of ``events`` to the event log, in order, and update the views
    from them (all in one transaction); returns how many."""
    rows = event_log_rows(events, at)
    if not rows:
        return 0
    # One transaction for the rows and the views (the caller's, when it has one).
    atomic = nullcontext() if connection.in_atomic_block else transaction.atomic()
    with atomic, connection.cursor() as cursor:
        cursor.execute(
            "SELECT brainframe_append_events(%s::jsonb)", [json.dumps(rows, default=str)]
        )
        projectors_run(rows)
    return len(rows)


def projectors_run(rows: list[dict[str, Any]]) -> None:
    """Keep the views current from ``rows`` just appended (by ``append_events`` or by a
    statement that appended them itself), in the appending transaction."""
    for projector in _projectors:
        projector(rows)


def event_log_rows(events: Sequence[Event], at: datetime | None = None) -> list[dict[str, Any]]:
    """The rows ``brainframe_append_events`` appends for ``events`` (the ones it keeps)."""
    at = at or timezone.now()
    return [event.log_row(at) for event in events if event.LOGGED]


def publish_tool_call(call: ToolCall, *, after: tuple[Event, ...] = ()) -> Future[Any] | None:
    """The call's row on the board, published with the events ``after`` in front of it."""
    return publish(*after, ToolCallChanged.of(call))
