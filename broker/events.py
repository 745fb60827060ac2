"""Events for the live board, published on the Channels layer (Redis).

Publishing is best effort and off the caller's path: events go to one long-lived event loop in a
background thread, which keeps its Redis connections open, so a tool call neither waits for nor
fails because of a notification. A board that misses an event catches up on its next load.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any

from channels.layers import get_channel_layer

from brainframe.models import ToolCall

log = logging.getLogger(__name__)
BOARD_GROUP = "board"

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


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


Event = tuple[str, dict[str, Any]]


def publish(event: str, payload: dict[str, Any]) -> Future[Any] | None:
    """Queue ``event`` for every open board. Returns the pending send (tests may wait on it)."""
    return publish_all([(event, payload)])


def publish_after_commit(events: list[Event]) -> None:
    """``publish_all`` once the current transaction commits (at once outside one): for events
    whose rows the board reads to show them."""
    from django.db import transaction

    transaction.on_commit(lambda: publish_all(events))


def publish_all(events: list[Event]) -> Future[Any] | None:
    """Several events, in order, as one message (a tool call's Guardian assessment with its
    row): each message costs the channel layer a few Redis commands, whatever it carries."""
    layer = get_channel_layer()
    if layer is None or not events:
        return None
    message = {
        "type": "board.events",
        "events": [{"event": event, "payload": payload} for event, payload in events],
    }
    try:
        future = asyncio.run_coroutine_threadsafe(
            layer.group_send(BOARD_GROUP, message), _publisher_loop()
        )
    except RuntimeError:  # interpreter shutting down
        return None
    future.add_done_callback(_log_failure)
    return future


def publish_tool_call(call: ToolCall, *, after: list[Event] | None = None) -> Future[Any] | None:
    """The call's row on the board, published with the events ``after`` in front of it."""
    row = (
        "tool_call",
        {
            "call_id": str(call.id),
            "agent_id": call.agent_id,
            # Enough to render the board's row without a database read (see dashboard.render).
            "agent_name": call.agent.name,
            "o_tag": str(call.o_tag_id) if call.o_tag_id else None,
            "tool_id": call.requested_tool_id,
            "decision": call.decision,
            "code": call.decision_code,
            "outcome": call.outcome,
            "duration_ms": call.duration_ms,
            "timestamp": call.timestamp.isoformat(),
        },
    )
    return publish_all([*(after or []), row])
