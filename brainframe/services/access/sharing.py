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
from brainframe.safety.policy.conditions import condition_schema, document_errors, holds

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


@dataclass(frozen=True)
class ShareItem:
    """What is read: a deliverable or a memory entry, with its owner (an agent id, or None when
    staff or a job made it) and its sharing attributes."""

    kind: str
    id: str
    owner: str | None
    boundary: str
    participant_id: str
    data_class: str
    policy: dict[str, Any]

    @classmethod
    def of_deliverable(cls, item: Deliverable) -> ShareItem:
        return cls(
            "deliverable", str(item.pk), item.agent_id, item.boundary, item.participant_id,
            item.data_class, item.share_policy or {},
        )  # fmt: skip

    @classmethod
    def of_memory(cls, row: dict[str, Any]) -> ShareItem:
        """A context-bucket entry's row (``created_by`` is ``agent:<id>`` for an agent's)."""
        author = str(row.get("created_by") or "")
        owner = author.removeprefix("agent:") if author.startswith("agent:") else None
        return cls(
            "observation", str(row["id"]), owner, row["boundary"], row["participant_id"],
            row["data_class"], row.get("share_policy") or {},
        )  # fmt: skip


def share_facts(
    *, agent: Agent, principal: dict[str, Any] | None, item: ShareItem
) -> dict[str, Any]:
    """What sharing conditions read: the requester (the agent, and the person its chain acts
    for) and the item."""
    participant = (principal or {}).get("participant_id")
    same = (participant == item.participant_id) if participant and item.participant_id else None
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
            "kind": item.kind,
            "owner": item.owner,
            "participant_id": item.participant_id or None,
            "data_class": item.data_class,
            "boundary": item.boundary,
        },
    }


def share_decide(
    *,
    agent: Agent,
    principal: dict[str, Any] | None,
    item: ShareItem,
    mac: list[MacRule] | None = None,
) -> ShareDecision:
    """DAC → MAC → ABAC for ``agent`` (in a chain acting for ``principal``) reading ``item``."""
    own = item.owner == agent.agent_id
    if own and principal is None:
        return ShareDecision(True, "owner", "its own")
    if item.boundary == Boundary.NONE and not own:
        return ShareDecision(False, "dac", f"{item.owner or 'its owner'} shares it with nobody")
    facts = share_facts(agent=agent, principal=principal, item=item)
    for rule in mac if mac is not None else MacRule.objects.order_by("code"):
        if holds(rule.when, facts):
            return ShareDecision(False, "mac", f"{rule.code}: {rule.reason}")
    if own or item.boundary == Boundary.ALL:
        return ShareDecision(True, "dac", f"{item.owner or 'its owner'} shares it with all")
    if item.policy and holds(item.policy, facts):
        return ShareDecision(True, "abac", "the requester fits its sharing policy")
    return ShareDecision(False, "abac", "the requester does not fit its sharing policy")


def _event(
    agent: Agent, principal: dict[str, Any] | None, item: ShareItem, d: ShareDecision
) -> ShareDecided:
    return ShareDecided(
        agent_id=agent.agent_id,
        item=f"{item.kind}:{item.id}",
        owner=item.owner or "",
        allowed=d.allowed,
        layer=d.layer,
        reason=d.reason,
        person_id=(principal or {}).get("person_id"),
    )


def share_decide_for(
    *,
    agent: Agent,
    principals: list[dict[str, Any]],
    item: ShareItem,
    mac: list[MacRule] | None = None,
) -> tuple[ShareDecision, dict[str, Any] | None]:
    """A read done for several people at once (the work the agent holds) must be allowed for
    each of them: the first refusal, else the last allowance; with the principal it was for."""
    decision, principal = ShareDecision(True, "owner", "its own"), None
    each: list[dict[str, Any] | None] = [*principals] or [None]
    for principal in each:
        decision = share_decide(agent=agent, principal=principal, item=item, mac=mac)
        if not decision.allowed:
            break
    return decision, principal


def deliverable_read(
    *, agent: Agent, principals: list[dict[str, Any]], item: Deliverable
) -> ShareDecision:
    """Decide a read of ``item`` for ``principals`` (the people the read is done for,
    ``brainframe.services.access.held.reading_principals``) and keep the decision in the event
    log."""
    shared = ShareItem.of_deliverable(item)
    decision, principal = share_decide_for(agent=agent, principals=principals, item=shared)
    with transaction.atomic():
        emit(_event(agent, principal, shared, decision))
    return decision


def memory_readable(
    *, agent: Agent, principals: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> set[str]:
    """The ids of the memory entries ``agent`` may read for ``principals`` (the rest are
    withheld); every decision on an entry it does not own is kept in the event log, in one
    statement."""
    mac = list(MacRule.objects.order_by("code"))
    readable, events = set(), []
    for row in rows:
        item = ShareItem.of_memory(row)
        decision, principal = share_decide_for(
            agent=agent, principals=principals, item=item, mac=mac
        )
        if decision.allowed:
            readable.add(item.id)
        if decision.layer != "owner":
            events.append(_event(agent, principal, item, decision))
    if events:
        with transaction.atomic():
            emit(*events)
    return readable
