"""Threat assessment stage: the Guardian reads the free text in a call's arguments.

Every string in the arguments (nested ones too) is assessed as one text, at the agent's trust
level (``agents.trust_level``: external agents, whose arguments arrive straight from voice,
video and workflow platforms, should be ``untrusted``). In a chain that acts for a person, a
request to act in the text (move money, change bank details, forward data outward…) is judged by
what that person's ACL permissions let them ask for (``safety.acts.rights_from_tools``), not by
the agent's trust alone.
"""

from __future__ import annotations

from typing import Any

from brainframe.models import Agent
from brainframe.safety.guardian.acts import rights_from_tools
from brainframe.safety.guardian.core import TRUST_MULTIPLIERS
from brainframe.safety.guardian.core import assess as guardian_assess

from .context import CallContext


def trust_for(agent: Agent) -> str:
    return agent.trust_level if agent.trust_level in TRUST_MULTIPLIERS else "untrusted"


def assess(ctx: CallContext) -> dict[str, Any]:
    text = ctx.free_text
    if not text.strip():
        return {
            "detector": "guardian",
            "risk": 0.0,
            "action": "allow",
            "patterns": [],
            "trust": trust_for(ctx.agent),
        }
    acl = ctx.acl_decision  # check_principal's, for the person the chain acts for
    rights = rights_from_tools(acl.tools) if acl is not None and acl.allows else None
    return guardian_assess(text, trust_for(ctx.agent), rights=rights).as_dict()
