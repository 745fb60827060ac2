"""External agents RABS hands work to over A2A (Type 3 outward): each is a registry tool of
handler type ``a2a`` (``broker/handlers/a2a.py``), registered from its card.

``a2a_agent_register`` reads the card at ``card_url`` and creates (or brings up to date) the tool
``a2a.<name>``: the card's description and skills in its description and ``handler_config``
(the admin shows them), an input schema offering the skills, and — as for imported upstream
tools — **disabled** until staff enable it and give agents access. A card that requires a
security scheme ``credential_env`` names no credential for is refused: nothing could be sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.types import AgentCard
from django.db import transaction

from brainframe.choices import (
    ContextBucket,
    DataClass,
    ExecutionMode,
    RiskLevel,
    default_monitoring_ceiling,
    default_permission_tier,
)
from brainframe.models import Tool

from ..handlers.a2a import card_read


class A2ARegistrationError(ValueError):
    pass


def _skills(card: AgentCard) -> list[dict[str, Any]]:
    return [
        {"id": s.id, "name": s.name, "description": s.description, "tags": list(s.tags)}
        for s in card.skills
    ]


def _description(card: AgentCard, skills: list[dict[str, Any]]) -> str:
    lines = [
        f"Hand work to {card.name}, an external agent (A2A): {card.description}".strip(),
        "Send {message, skill?}; follow a task up with {task_id}, or continue it with "
        "{task_id, message}. The answer is the remote task: its state and what it said.",
        "Skills:",
        *(f"- {s['id']}: {s['name']} — {s['description']}" for s in skills),
    ]
    return "\n".join(lines)[:5000]


def _input_schema(skills: list[dict[str, Any]]) -> dict[str, Any]:
    skill: dict[str, Any] = {"type": "string"}
    if skills:
        skill["enum"] = [s["id"] for s in skills]
    return {
        "type": "object",
        "additionalProperties": False,
        "anyOf": [{"required": ["message"]}, {"required": ["task_id"]}],
        "properties": {
            "message": {"type": "string", "minLength": 1, "maxLength": 20_000},
            "skill": skill,
            "task_id": {"type": "string", "minLength": 1, "maxLength": 200},
        },
    }


def a2a_agent_register(
    *, name: str, card_url: str, credential_env: dict[str, str] | None = None
) -> Tool:
    """Read the card and create or update the tool ``a2a.<name>`` (new ones disabled)."""
    names = dict(credential_env or {})
    try:
        card = asyncio.run(card_read(card_url))
    except Exception as exc:
        raise A2ARegistrationError(f"the card at {card_url} could not be read: {exc}") from exc
    requirements = list(card.security_requirements)
    if requirements and not any(all(s in names for s in r.schemes) for r in requirements):
        wanted = sorted({s for r in requirements for s in r.schemes})
        raise A2ARegistrationError(
            f"{card.name} requires {', '.join(wanted)}: name the environment variable of a "
            "credential for it (credential_env)"
        )
    skills = _skills(card)
    config = {"card_url": card_url, "credential_env": names, "skills": skills}
    with transaction.atomic():
        tool = Tool.objects.select_for_update().filter(pk=f"a2a.{name}").first()
        if tool is None:
            risk = RiskLevel.WRITE
            tool = Tool(
                tool_id=f"a2a.{name}",
                category=Tool.Category.OPERATIONS,
                agent_access=[],
                risk_level=risk,
                execution_mode=ExecutionMode.DISABLED,
                context_bucket=ContextBucket.DATA_REPORTING,
                monitoring_ceiling=default_monitoring_ceiling(risk),
                data_class=DataClass.LOGISTICS,
                permission_tier=default_permission_tier(risk),
                external_channel=True,  # what it sends leaves: the outbound PII filter applies
                handler_type=Tool.HandlerType.A2A,
            )
        tool.description = _description(card, skills)
        tool.handler_config = {**(tool.handler_config or {}), **config}
        tool.input_schema = _input_schema(skills)
        tool.output_schema = {}
        tool.save()
    return tool
