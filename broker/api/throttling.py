"""Per-agent rate limits on the agent API (Redis-backed, shared by every web process)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle


class AgentRateThrottle(SimpleRateThrottle):
    """``RABS_AGENT_RATE`` requests per agent (e.g. "1200/min"); over it: 429 rate_limited."""

    scope = "agent"

    def get_rate(self) -> str | None:
        return str(settings.RABS_AGENT_RATE) if settings.RABS_AGENT_RATE else None

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        agent = getattr(request, "auth", None)
        agent_id = getattr(agent, "agent_id", None)
        return f"throttle:agent:{agent_id}" if agent_id else None
