"""Threat assessment seam: free text in a call's arguments → risk, action, patterns.

The Guardian detector plugs in here (``assess``). Until it is configured, every call is
assessed as allowed with the detector recorded as ``none``, so the audit says honestly that no
assessment was made.
"""

from __future__ import annotations

from typing import Any

from .context import CallContext


def assess(ctx: CallContext) -> dict[str, Any]:
    return {"detector": "none", "risk": 0.0, "action": "allow", "patterns": []}
