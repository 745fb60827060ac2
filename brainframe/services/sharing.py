"""Sharing (seed 002): DAC → MAC → ABAC for a read of something another agent owns.

- **DAC**: the owner's boundary: ``none`` refuses; ``all`` and ``ask`` go on;
- **MAC**: rules no owner can override (``mac_rules``, add-only): the first that holds refuses;
- **ABAC**: for ``ask``, the item's sharing policy (the condition language over the requester's
  and the item's attributes) must hold.

The owner itself always reads its own. Every decision, either way, is kept in the event log
(``governance:share_decided``), in the transaction of the read. docs/access.md, "Sharing".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from brainframe.events import ShareDecided, emit
from brainframe.models import Agent, Boundary, Deliverable, MacRule
from brainframe.safety.conditions import condition_schema, document_errors, holds

SHARE_ROOTS = ("requester", "item")
SHARE_POLICY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$ref": "#/$defs/condition",
    "$defs": {"condition": condition_schema(SHARE_ROOTS)},
}


def share_policy_errors(policy: Any) -> list[str]:
    """Problems with an item's sharing policy (empty is allowed: nobody is let in by it)."""
    return [] if policy in ({}, None) else document_errors(SHARE_POLICY_SCHEMA, policy)


@dataclass(frozen=True)
class ShareDecision:
    allowed: bool
    layer: str  # owner / dac / mac / abac
    reason: str


def share_facts(
    *, agent: Agent, principal: dict[str, Any] | None, item: Deliverable
) -> dict[str, Any]:
    """What sharing conditions read: the requester (the agent, and the person its chain acts
    for) and the item."""
    participant = (principal or {}).get("participant_id")
    same = (
        None if not participant or not item.participant_id else participant == item.participant_id
    )
    return {
        "requester": {
            "agent_id": agent.agent_id,
            "trust_level": agent.trust_level,
            "role": agent.role,
            "person_id": (principal or {}).get("person_id"),
            "relationship": (principal or {}).get("relationship"),
            "groups": (principal or {}).get("groups") or [],
            "participant_id": participant,
            "same_participant": same,
        },
        "item": {
            "kind": "deliverable",
            "owner": item.agent_id,
            "participant_id": item.participant_id or None,
            "data_class": item.data_class,
            "boundary": item.boundary,
        },
    }


def share_decide(
    *, agent: Agent, principal: dict[str, Any] | None, item: Deliverable
) -> ShareDecision:
    """DAC → MAC → ABAC for ``agent`` (in a chain acting for ``principal``) reading ``item``."""
    if item.agent_id == agent.agent_id and principal is None:
        return ShareDecision(True, "owner", "its own")
    if item.boundary == Boundary.NONE:
        return ShareDecision(False, "dac", f"{item.agent_id} shares it with nobody")
    facts = share_facts(agent=agent, principal=principal, item=item)
    for rule in MacRule.objects.order_by("code"):
        if holds(rule.when, facts):
            return ShareDecision(False, "mac", f"{rule.code}: {rule.reason}")
    if item.agent_id == agent.agent_id or item.boundary == Boundary.ALL:
        return ShareDecision(True, "dac", f"{item.agent_id} shares it with all")
    if item.share_policy and holds(item.share_policy, facts):
        return ShareDecision(True, "abac", "the requester fits its sharing policy")
    return ShareDecision(False, "abac", "the requester does not fit its sharing policy")


def deliverable_read(
    *, agent: Agent, principal: dict[str, Any] | None, item: Deliverable
) -> ShareDecision:
    """Decide a read of ``item`` and keep the decision in the event log."""
    decision = share_decide(agent=agent, principal=principal, item=item)
    with transaction.atomic():
        emit(
            ShareDecided(
                agent_id=agent.agent_id,
                item=f"deliverable:{item.pk}",
                owner=item.agent_id,
                allowed=decision.allowed,
                layer=decision.layer,
                reason=decision.reason,
                person_id=(principal or {}).get("person_id"),
            )
        )
    return decision
