"""Submitting a tool call: prepare → decide → audit → execute (``execution``) → publish.

The only path by which an agent's request becomes an action. Failures of the audit store fail
closed: nothing executes unless the decision is recorded first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from django.db import DatabaseError, IntegrityError

from brainframe.events import (
    ApprovalCreated,
    Event,
    GuardianAssessmentComplete,
    SecurityThreatDetected,
    ShadowDecision,
    publish,
    publish_tool_call,
)
from brainframe.models import (
    Agent,
    ApprovalRequest,
    ToolCall,
)
from brainframe.services.trust.alignment import alignment_signal, safety_escalation
from brainframe.telemetry import decision_observed, now_ns

from ..audit.record import record_decision
from ..errors import BrokerRefusal
from ..pipeline.context import (
    CallContext,
    CallRequest,
    Expectation,
    StaleSnapshot,
    Verdict,
)
from ..pipeline.stages import decide
from .approvals import WAITING_FOR_WORKER, awaiting_worker
from .chain import prepare
from .execution import call_execute, call_executed, call_run, runs_before_recording
from .notifications import notify_enqueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallAnswer:
    status: int
    body: dict[str, Any]


class Admitted(Protocol):
    """An agent as a face admitted it for one request (a signed request's user, an MCP
    bearer): read for it, or ``remembered`` from the process's memory at ``generation``."""

    @property
    def agent(self) -> Agent: ...
    @property
    def generation(self) -> str | None: ...
    @property
    def registry_token(self) -> str | None: ...
    @property
    def remembered(self) -> bool: ...


A = TypeVar("A", bound=Admitted)


def tool_call_submit_admitted(
    admitted: A, request: CallRequest, reread: Callable[[], A]
) -> CallAnswer:
    """The call decided and answered under an agent checked for this request: by the
    statement that records the decision (``Expectation``) when it came from memory. When that
    check fails, or the answer came without it (an idempotent replay, a refusal before the
    statement), the agent as admitted is read anew (``reread``: it raises what refuses the
    caller now, a paused agent or a revoked key) and, if it changed, the call is decided
    anew."""
    if admitted.remembered and admitted.generation is not None:
        expect = Expectation(admitted.generation)
        try:
            answer = tool_call_submit(agent=admitted.agent, request=request, expect=expect)
        except StaleSnapshot:
            admitted = reread()
        except BrokerRefusal:
            reread()  # refused by what the database says now, if it refuses
            raise
        else:
            if expect.verified:
                return answer
            current = reread()
            if current.generation == admitted.generation:
                return answer
            admitted = current
    return tool_call_submit(
        agent=admitted.agent, request=request, registry_token=admitted.registry_token
    )


def tool_call_submit(
    *,
    agent: Agent,
    request: CallRequest,
    registry_token: str | None = None,
    expect: Expectation | None = None,
) -> CallAnswer:
    """``registry_token``: the registry's generation already read on this request (by the
    signature check), else it is read here. ``expect``: the agent comes from the process's
    memory, at this generation: the decision's statement checks it and raises StaleSnapshot
    (nothing written, nothing executed) if it is not current; ``expect.verified`` tells the
    caller whether the answer was given under a checked agent (else it must check it)."""
    started = now_ns()
    if request.idempotency_key:
        replay = _idempotent_replay(agent, request)
        if replay is not None:
            return replay
    ctx = prepare(agent=agent, request=request, registry_token=registry_token, expect=expect)
    verdict = decide(ctx)
    assessment = _assessment_events(ctx) + _shadow_events(ctx, verdict)  # with the call's row
    # A read without side effects runs first and is recorded whole, in one statement (its
    # result is withheld unless that write commits); every other call is audited first.
    ran = None
    if verdict.executes and ctx.tool is not None and runs_before_recording(ctx.tool):
        ran = call_run(
            tool=ctx.tool,
            arguments=request.arguments,
            call_id=ctx.call_id,
            recorded_input=request.arguments,
        )
    try:
        recorded = record_decision(ctx, verdict, ran=ran, events=assessment)
    except IntegrityError:
        # Another request with the same Idempotency-Key won the race: answer as it did.
        replay = _idempotent_replay(agent, request) if request.idempotency_key else None
        if replay is None:
            raise
        return replay
    except DatabaseError as exc:
        publish(*assessment)
        log.exception("audit write failed; refusing the call")
        raise BrokerRefusal(
            503, "audit_unavailable", "the audit could not be written; nothing was executed"
        ) from exc
    call = recorded.call
    decision_observed(call, started)
    # What the decision's statement appended to the event log; the new approval is announced
    # on its own (``_announce_new_approval``).
    shown = tuple(e for e in recorded.events if not isinstance(e, ApprovalCreated))
    if ran is not None:
        call_executed(call, events=shown)
        return call_answer(call, recorded.approval)
    if not verdict.executes:  # an executing call is published once, with its outcome
        publish_tool_call(call, after=shown)
    if ctx.tool is not None and any(f.safety_level_zero for f in ctx.findings):
        safety_escalation(tool=ctx.tool, call_id=call.id, reason=verdict.detail)
    if call.decision == ToolCall.Decision.DENIED:
        alignment_signal(call_id=call.id)  # a directive violation demotes at once
    if recorded.approval is not None:
        _announce_new_approval(recorded.approval)
    if verdict.executes:
        assert ctx.tool is not None
        call_execute(call=call, tool=ctx.tool, arguments=request.arguments, events=shown)
    return call_answer(call, recorded.approval)


def _assessment_events(ctx: CallContext) -> tuple[Event, ...]:
    """Seed 001's Guardian events: every assessment, and threats when something matched."""
    threat = ctx.threat
    if not threat or threat.get("detector") != "guardian":
        return ()
    common: dict[str, Any] = {
        "call_id": str(ctx.call_id),
        "agent_id": ctx.agent.agent_id,
        "risk": threat.get("risk", 0.0),
        "action": threat.get("action", "allow"),
        "patterns": tuple(threat.get("patterns") or ()),
        "trust": threat.get("trust"),
    }
    complete = GuardianAssessmentComplete(**common)
    if not common["patterns"]:
        return (complete,)
    return complete, SecurityThreatDetected(**common, blocked=common["action"] == "block")


def _shadow_events(ctx: CallContext, verdict: Verdict) -> tuple[Event, ...]:
    """A shadow rule's would-be decision, written with the call's (docs/access.md)."""
    if ctx.shadow is None or ctx.tool is None:
        return ()
    return (
        ShadowDecision(
            call_id=str(ctx.call_id),
            agent_id=ctx.agent.agent_id,
            tool_id=ctx.tool.tool_id,
            decided=verdict.outcome,
            **ctx.shadow,
        ),
    )


def _announce_new_approval(approval: ApprovalRequest) -> None:
    publish(ApprovalCreated.of(approval))
    if approval.kind == ApprovalRequest.Kind.PRE_EXECUTION:
        notify_enqueue(approval_id=approval.pk, event="created")


def _idempotent_replay(agent: Agent, request: CallRequest) -> CallAnswer | None:
    first = ToolCall.objects.filter(agent=agent, idempotency_key=request.idempotency_key).first()
    if first is None:
        return None
    if first.request_hash != request.request_hash:
        raise BrokerRefusal(
            409,
            "idempotency_conflict",
            "this Idempotency-Key was used with a different request",
            field="Idempotency-Key",
        )
    answer = call_answer(first)
    answer.body["replayed"] = True
    return answer


def _tags(call: ToolCall) -> dict[str, Any]:
    return {
        "call_id": str(call.id),
        "r_tag": str(call.r_tag_id) if call.r_tag_id else None,
        "o_tag": str(call.o_tag_id) if call.o_tag_id else None,
        "vpol": str(call.vpol_id) if call.vpol_id else None,
    }


_LOOK_UP: Any = object()


def call_answer(call: ToolCall, approval: ApprovalRequest | None = _LOOK_UP) -> CallAnswer:
    """The answer for a call, from its audit row (fresh, replayed or polled). ``approval``: the
    call's approval request when the caller has it (None: it has none)."""
    body = _tags(call)
    decision = call.decision
    if approval is _LOOK_UP:
        approval = ApprovalRequest.objects.filter(tool_call=call).first()
    if decision in (ToolCall.Decision.EXECUTED, ToolCall.Decision.EXECUTED_POST_REVIEW):
        body.update(
            status="executed",
            result=call.output,
            outcome=call.outcome,
            duration_ms=call.duration_ms,
        )
        if call.error:
            body["error"] = call.error
        if approval is not None:
            body["review"] = {"approval_id": str(approval.id), "kind": approval.kind}
        return CallAnswer(200, body)
    if decision == ToolCall.Decision.PENDING_APPROVAL:
        assert approval is not None
        body.update(
            status="pending_approval",
            approval_id=str(approval.id),
            approval_status=approval.status,
            expires_at=approval.timeout_at.isoformat(),
        )
        if approval.status == ApprovalRequest.Status.REJECTED:
            body.update(status="rejected", rejection_reason=approval.decision_reason)
        elif approval.status == ApprovalRequest.Status.EXPIRED:
            body.update(status="expired")
        elif call.outcome not in (ToolCall.Outcome.NOT_RUN, ToolCall.Outcome.PENDING):
            body.update(status="executed", result=call.output, outcome=call.outcome)
            if call.error:  # why an approved call failed, as for one that ran at once
                body["error"] = call.error
        elif awaiting_worker(approval, call):  # approved, and no worker has taken it up
            body.update(waiting_for="worker", detail=WAITING_FOR_WORKER)
        return CallAnswer(202, body)
    if decision == ToolCall.Decision.DENIED:
        body.update(status="denied", code=call.decision_code, detail=call.decision_detail)
        return CallAnswer(403, body)
    body.update(status="invalid", code=call.decision_code, detail=call.decision_detail)
    if call.decision_code == "unknown_tool":
        return CallAnswer(404, body)
    body["errors"] = call.decision_errors
    return CallAnswer(400, body)
