"""Callables behind the broker's own tools (``brainframe.safety.baseline.SYSTEM_TOOLS``)."""

from __future__ import annotations

import uuid
from typing import Any

from brainframe.services.grants import GrantRefused, grant_apply

from .base import HandlerFailure
from .function import ToolFunction


def capability_grant(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """Apply what an approved ``rabs.capability.request`` asked for."""
    try:
        return grant_apply(call_id=call_id, arguments=args)
    except GrantRefused as exc:
        raise HandlerFailure(str(exc)) from exc


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {"rabs.capability_grant": capability_grant}
