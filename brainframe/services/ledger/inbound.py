"""Type 3 (external) agents: platform events (voice, video, workflow) become origins and tasks.

An external agent (e.g. External Reggie on LiveKit) posts each event it receives, signed with its
own RABS-HMAC credential. The event is registered as an O-Tag (``registered_by`` the external
agent, the platform's event id kept for idempotency), its text is assessed by the Guardian, and,
unless blocked, an optional task is created for the Type 2 agent that should act on it, under
that O-Tag. The external agent's own tool calls then go through the same broker pipeline under
its identity, citing the O-Tag (``o_tag`` in the tool-call request) so the whole chain shares it.

A result sent back for an event we pushed to the platform (``in_reply_to``: the O-Tag the
delivery carried) joins that chain: its task is made under the chain's O-Tag (and so for the
person behind it), provided a delivery to one of this agent's subscriptions carried that O-Tag —
an agent cannot join a chain it was never told of (``unknown_origin``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from brainframe.events import (
    Event,
    GuardianAssessmentComplete,
    InboundReceived,
    SecurityThreatDetected,
    emit,
)
from brainframe.models import Agent, AgentTask, LedgerEvent, OriginRegistry, WebhookDelivery
from brainframe.safety.guardian.core import Assessment, assess
from brainframe.services.ledger.ledgers import ledger_event_append
from brainframe.services.memory.indexing import classify_origin_after_commit


class InboundRefusal(Exception):
    def __init__(self, status: int, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field


@dataclass(frozen=True)
class InboundResult:
    origin: OriginRegistry
    task: AgentTask | None
    created: bool
    blocked: bool


def _replied_chain(agent: Agent, o_tag: Any) -> OriginRegistry | None:
    """The chain a result answers: an O-Tag a webhook delivery to this agent carried."""
    if o_tag is None:
        return None
    told = WebhookDelivery.objects.filter(
        subscription__agent=agent, event__payload__o_tag=str(o_tag)
    ).exists()
    chain = OriginRegistry.objects.filter(pk=o_tag).first() if told else None
    if chain is None:
        raise InboundRefusal(
            404,
            "unknown_origin",
            "in_reply_to must be an O-Tag an event pushed to you carried",
            field="in_reply_to",
        )
    return chain


def inbound_event_record(
    *, agent: Agent, event: dict[str, Any], trust: str | None = None
) -> InboundResult:
    """Register one external event (idempotent on the agent's ``event_id``). Its text is
    assessed at the agent's trust level, or at ``trust`` when the text comes from further out
    (an A2A message from another organisation's agent: untrusted)."""
    if agent.type != Agent.Type.EXTERNAL:
        raise InboundRefusal(403, "external_agents_only", "only Type 3 agents post inbound events")
    task_spec = event.get("task")
    assignee: Agent | None = None
    if task_spec:
        assignee = Agent.objects.filter(agent_id=task_spec["assign_to"]).first()
        if assignee is None or assignee.type == Agent.Type.EXTERNAL:
            raise InboundRefusal(
                400,
                "unknown_assignee",
                "assign_to must name a native or sandboxed agent",
                field="task.assign_to",
            )

    chain = _replied_chain(agent, event.get("in_reply_to"))
    with transaction.atomic():
        # One event id, one origin: serialise concurrent deliveries of the same event.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"inbound:{agent.agent_id}:{event['event_id']}"],
            )
        existing = OriginRegistry.objects.filter(
            registered_by=agent, metadata__event_id=event["event_id"]
        ).first()
        if existing is not None:
            task = AgentTask.objects.filter(o_tag=existing).order_by("created_at").first()
            blocked = existing.metadata.get("guardian", {}).get("action") == "block"
            return InboundResult(existing, task, created=False, blocked=blocked)

        text = event.get("text", "")
        # inbound text is what the outside wrote: both Guardian stages read it, however short
        assessment = assess(text, trust=trust or agent.trust_level, learned=True) if text else None
        blocked = bool(assessment and assessment.action == "block")
        metadata = {
            **event.get("metadata", {}),
            "event_id": event["event_id"],
            "event_type": event["event_type"],
            "platform": event["platform"],
            "text": text,
        }
        if assessment is not None:
            metadata["guardian"] = assessment.as_dict()
        if chain is not None:
            metadata["in_reply_to"] = str(chain.pk)
        origin = OriginRegistry.objects.create(
            origin_type=event.get("origin_type") or OriginRegistry.OriginType.WEBHOOK,
            source_ref=event.get("source_ref") or f"{event['platform']}:{event['event_id']}",
            metadata=metadata,
            registered_by=agent,
        )
        # The events ledger keeps the event as it arrived (permanent, hash-chained).
        a2a = origin.origin_type == OriginRegistry.OriginType.A2A
        ledger_event_append(
            kind=LedgerEvent.Kind.A2A if a2a else LedgerEvent.Kind.WEBHOOK,
            channel="a2a" if a2a else "webhook",
            adapter=agent.agent_id,
            external_id=str(event["event_id"]),
            sender=str(event.get("platform", "")),
            text=text,
            payload=event,
            origin=origin,
        )
        classify_origin_after_commit(origin.id)
        task = None
        if task_spec and not blocked:
            assert assignee is not None
            payload = dict(task_spec.get("payload") or {})
            payload.setdefault(
                "source", {"platform": event["platform"], "event": event["event_id"]}
            )
            if text:
                payload.setdefault("description", text)
            if assessment is not None and assessment.action == "flag":
                payload["guardian_flag"] = assessment.as_dict()
            task = AgentTask.objects.create(
                agent=assignee,
                title=task_spec["title"],
                priority=task_spec.get("priority", 50),
                payload=payload,
                o_tag=chain or origin,  # a result joins the chain it answers
            )
    _announce(origin, task, assessment)
    return InboundResult(origin, task, created=True, blocked=blocked)


def _announce(
    origin: OriginRegistry, task: AgentTask | None, assessment: Assessment | None
) -> None:
    metadata = origin.metadata or {}
    emit(
        InboundReceived(
            o_tag=str(origin.id),
            agent_id=str(origin.registered_by_id),
            origin_type=origin.origin_type,
            platform=str(metadata.get("platform", "")),
            event_type=str(metadata.get("event_type", "")),
            assigned_to=task.agent_id if task is not None else None,
            task_id=str(task.task_id) if task is not None else None,
            blocked=metadata.get("guardian", {}).get("action") == "block",
        )
    )
    if assessment is not None:
        o_tag, agent_id = str(origin.id), origin.registered_by_id
        events: list[Event] = [
            GuardianAssessmentComplete(
                risk=assessment.risk,
                action=assessment.action,
                o_tag=o_tag,
                agent_id=agent_id,
                patterns=tuple(assessment.patterns),
                trust=assessment.trust,
            )
        ]
        if assessment.action != "allow":
            events.append(
                SecurityThreatDetected(
                    risk=assessment.risk,
                    action=assessment.action,
                    patterns=tuple(assessment.patterns),
                    blocked=assessment.action == "block",
                    o_tag=o_tag,
                    agent_id=agent_id,
                    trust=assessment.trust,
                )
            )
        emit(*events)
