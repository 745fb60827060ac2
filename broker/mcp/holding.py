"""How long a ``tools/call`` that needs a reviewer is held open, and what the client is told
meanwhile.

Agent frameworks give each MCP request a short timeout (the OpenAI Agents SDK: 5 s), so a call
is held only briefly by default (``RABS_MCP_HOLD_SECONDS``, at most 4 s) before it answers the
structured pending result; the agent then follows up with ``rabs_approval_wait``. A request
that carries a ``progressToken`` is held for ``RABS_MCP_APPROVAL_WAIT_SECONDS`` with
``notifications/progress`` every ``RABS_MCP_PROGRESS_SECONDS`` (a client may restart its
timeout on each). Either may ask for another hold with ``_meta["rabs/hold_s"]`` (0 to
``RABS_MCP_MAX_HOLD_SECONDS``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from mcp.server import ServerRequestContext

from ..errors import BrokerRefusal
from ..services.calls import CallAnswer

logger = logging.getLogger(__name__)

#: ``_meta`` key of a ``tools/call``: how long (seconds) to hold the call for a reviewer.
META_HOLD = "rabs/hold_s"
#: The ``logger`` of the ``notifications/message`` entries about an agent's calls.
LOGGER = "rabs.approvals"
#: The ASGI scope key of the request's MCP session (``sessions.Session``), when it has one.
SESSION_SCOPE_KEY = "rabs.mcp_session"

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def hold_seconds(meta: dict[str, Any], *, progress: bool) -> float:
    """How long to hold this call for a reviewer before answering it pending."""
    default = (
        settings.RABS_MCP_APPROVAL_WAIT_SECONDS if progress else settings.RABS_MCP_HOLD_SECONDS
    )
    asked = meta.pop(META_HOLD, None)
    if asked is None:
        return float(default)
    cap = float(settings.RABS_MCP_MAX_HOLD_SECONDS)
    if isinstance(asked, bool) or not isinstance(asked, int | float) or not 0 <= asked <= cap:
        raise BrokerRefusal(400, "invalid_request", f"a hold is 0-{cap:g} seconds", field=META_HOLD)
    return float(asked)


def level_allows(threshold: str | None, level: str) -> bool:
    """Whether an entry at ``level`` goes to a client that set ``threshold`` (None: unset,
    every entry from ``info`` up)."""
    floor = LEVELS.index(threshold) if threshold in LEVELS else LEVELS.index("info")
    return LEVELS.index(level) >= floor


async def log(ctx: ServerRequestContext[Any, Any], level: str, data: dict[str, Any]) -> None:
    """A ``notifications/message`` on this request's own stream (it goes out only when the
    request is answered as a stream: a ``tools/call`` with a ``progressToken``)."""
    try:
        await ctx.session.send_log_message(
            level,  # type: ignore[arg-type]
            data,
            LOGGER,
            related_request_id=ctx.request_id,
        )
    except Exception:  # the client went away: the call's answer stands regardless
        logger.debug("could not send a log message", exc_info=True)


def held_message(answer: CallAnswer, name: str, hold: float) -> dict[str, Any]:
    body = answer.body
    return {
        "event": "held",
        "tool": name,
        "call_id": body.get("call_id"),
        "approval_id": body.get("approval_id"),
        "expires_at": body.get("expires_at"),
        "hold_s": hold,
    }


def settled_message(answer: CallAnswer, name: str) -> tuple[str, dict[str, Any]]:
    body = answer.body
    status = body.get("status")
    event = {"executed": "approved", "rejected": "denied"}.get(str(status), str(status))
    level = "info" if event == "approved" else "warning"
    return level, {
        "event": event,
        "tool": name,
        "call_id": body.get("call_id"),
        "approval_id": body.get("approval_id"),
        "reason": body.get("rejection_reason"),
    }
