"""Events for the live board, published on the Channels layer (Redis).

Publishing is best effort: a board that misses an event catches up on its next load, while a
tool call must never fail because a notification could not be sent.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from brainframe.models import ToolCall

log = logging.getLogger(__name__)
BOARD_GROUP = "board"


def publish(event: str, payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            BOARD_GROUP, {"type": "board.event", "event": event, "payload": payload}
        )
    except Exception:
        log.warning("could not publish %s", event, exc_info=True)


def publish_tool_call(call: ToolCall) -> None:
    publish(
        "tool_call",
        {
            "call_id": str(call.id),
            "agent_id": call.agent_id,
            "tool_id": call.requested_tool_id,
            "decision": call.decision,
            "code": call.decision_code,
            "outcome": call.outcome,
            "duration_ms": call.duration_ms,
            "timestamp": call.timestamp.isoformat(),
        },
    )
