"""Submitting a tool call: prepare → decide → audit → execute (``execution``) → publish.

The only path by which an agent's request becomes an action. Failures of the audit store fail
closed: nothing executes unless the decision is recorded first.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F, OuterRef, Subquery, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from brainframe.events import (
    ApprovalCreated,
    ChainRefused,
    Event,
    GuardianAssessmentComplete,
    SecurityThreatDetected,
    ShadowDecision,
    emit,
    publish,
    publish_tool_call,
)
from brainframe.models import (
    Agent,
    AgentTask,
    ApprovalRequest,
    Delegation,
    OriginRegistry,
    ReasonLog,
    ToolCall,
)
from brainframe.services.access.held import held_work
from brainframe.services.trust.alignment import alignment_signal, safety_escalation
from brainframe.services.work.delegation import delegation_of_task
from brainframe.telemetry import decision_observed, now_ns

from ..audit.record import record_decision
from ..audit.rows import origin_new
from ..errors import BrokerRefusal
from ..pipeline.context import (
    CallContext,
    CallRequest,
    ChainTags,
    Expectation,
    StaleSnapshot,
    Verdict,
)
from ..pipeline.stages import decide
from ..registry import registry_remembered, registry_snapshot
from .approvals import WAITING_FOR_WORKER, awaiting_worker
from .execution import call_execute, call_executed, call_run, runs_before_recording
from .notifications import notify_enqueue

log = logging.getLogger(__name__)


def prepare(
    *,
    agent: Agent,
    request: CallRequest,
    registry_token: str | None = None,
    expect: Expectation | None = None,
) -> CallContext:
    """Load everything the stages read. Raises BrokerRefusal for references that do not resolve.

    ``expect``: the agent was not read for this request; decide under the process's registry
    snapshot as it is, and have the decision's statement check both (``Expectation``)."""
    ctx = CallContext(call_id=uuid.uuid4(), agent=agent, request=request)
    if expect is not None:
        registry = registry_remembered()
        if registry is None:  # nothing in memory to decide under
            raise StaleSnapshot("no registry snapshot in this process yet")
        expect.registry_token = registry.token
        ctx.expect = expect
    else:
        registry = registry_snapshot(registry_token)
    ctx.tool = registry.tool(request.tool_id)
    try:
        cited = _bind_chain(ctx, agent, request)
    except BrokerRefusal as refusal:
        _chain_refused(agent, request, refusal)
        raise
    if ctx.parent is not None:
        ctx.vpol = ctx.parent.vpol
    elif ctx.tool is not None:
        ctx.vpol = registry.governing_policy(ctx.tool)
    ctx.directives = registry.directives
    ctx.constitution = registry.constitution
    ctx.acl = registry.acl
    ctx.person_grants, ctx.agent_grants = registry.person_grants, registry.agent_grants
    ctx.local_hour = timezone.localtime().hour
    ctx.tags = _chain_tags(ctx)
    # Who the chain acts for (docs/access.md): the sender of the message that started it, as
    # the system recorded it (an origin the agent registers itself never carries one).
    text = None
    if ctx.parent is not None:
        text = getattr(ctx.parent, "chain_principal", None)
    elif cited is not None:
        text = cited[1]
    elif ctx.task is not None:
        text = getattr(ctx.task, "chain_principal", None)
    if text is not None:
        ctx.principal, ctx.principal_key = principal_parsed(text), text
    if ctx.task is not None and getattr(ctx.task, "delegation_id", None) is not None:
        ctx.delegation = delegation_of_task(ctx.task.pk)
    # A chain that names no person, or no delegated work, is decided under what the agent
    # holds (docs/access.md, "Authority is derived"): one indexed query, only when the agent's
    # row (checked by the decision's statement when it came from memory) counts any.
    if (
        ctx.tool is not None
        and agent.held_tasks
        and (ctx.principal is None or ctx.delegation is None)
    ):
        ctx.held = held_work(agent)
    return ctx


def _chain_refused(agent: Agent, request: CallRequest, refusal: BrokerRefusal) -> None:
    """A chain the agent named that did not hold is kept in the event log (it may be an attempt
    to act under someone else's authority); the refusal stands even if that write fails."""
    try:
        with transaction.atomic():
            emit(
                ChainRefused(
                    agent_id=agent.agent_id,
                    tool_id=request.tool_id,
                    code=refusal.code,
                    field=refusal.field or "",
                    detail=refusal.detail,
                    face=request.face,
                    task_id=str(request.task_id) if request.task_id else None,
                    parent_r_tag=str(request.parent_r_tag) if request.parent_r_tag else None,
                    o_tag=str(request.o_tag) if request.o_tag else None,
                )
            )
    except DatabaseError:
        log.exception("could not keep a refused chain in the event log")


def _conflict(field: str, detail: str) -> BrokerRefusal:
    return BrokerRefusal(409, "chain_conflict", detail, field=field)


def _bind_chain(
    ctx: CallContext, agent: Agent, request: CallRequest
) -> tuple[Any, str | None] | None:
    """The call's place in a chain, from the broker's records (docs/access.md, "Authority is
    derived"): a knock-on call inherits its parent's task (and through it the principal and the
    delegation); a call naming a task inherits the task's origin. What the agent also sends may
    only agree: an origin or O-Tag that would replace the chain is refused (``chain_conflict``).
    Returns the cited O-Tag (id, principal text) when the chain is one the call names by O-Tag."""
    task_id = request.task_id
    if request.o_tag is not None and (
        request.origin is not None or request.parent_r_tag is not None
    ):
        raise BrokerRefusal(
            400, "conflicting_origin", "give one of origin, o_tag and parent_r_tag", field="o_tag"
        )
    if request.parent_r_tag is not None:
        if request.origin is not None:
            raise BrokerRefusal(
                400,
                "chain_is_inherited",
                "a knock-on call inherits its origin and policy from parent_r_tag; omit origin",
                field="origin",
            )
        ctx.parent = (
            ReasonLog.objects.select_related("vpol")
            .annotate(chain_principal=_PRINCIPAL_TEXT, chain_task=_PARENT_TASK)
            .filter(pk=request.parent_r_tag, agent=agent)
            .first()
        )
        if ctx.parent is None:
            raise BrokerRefusal(
                404, "unknown_parent_r_tag", "no such R-Tag of yours", field="parent_r_tag"
            )
        inherited = getattr(ctx.parent, "chain_task", None)
        if task_id is not None and task_id != inherited:
            raise _conflict(
                "task_id",
                "a knock-on call belongs to its parent call's task"
                + (f" ({inherited})" if inherited else " (none)")
                + "; omit task_id or name that one",
            )
        task_id = inherited
    if task_id is not None:
        ctx.task = (
            AgentTask.objects.select_related("on_behalf_of")
            .annotate(chain_principal=_PRINCIPAL_TEXT, delegation_id=_DELEGATION)
            .filter(pk=task_id, agent=agent)
            .first()
        )
        if ctx.task is None:
            raise BrokerRefusal(404, "unknown_task", "no such task in your inbox", field="task_id")
        requester = ctx.task.on_behalf_of
        if requester is not None:
            ctx.requester_roles = frozenset(requester.groups.values_list("name", flat=True))
        chain = ctx.task.o_tag_id
        if chain is not None and request.origin is not None:
            raise _conflict(
                "origin",
                f"task {ctx.task.task_id} belongs to the chain of O-Tag {chain}: a call for it "
                "inherits that origin; omit origin",
            )
        if chain is not None and request.o_tag is not None and request.o_tag != chain:
            raise _conflict(
                "o_tag", f"task {ctx.task.task_id} belongs to the chain of O-Tag {chain}, not "
                f"{request.o_tag}",
            )  # fmt: skip
    if request.o_tag is None or (ctx.task is not None and ctx.task.o_tag_id == request.o_tag):
        return None
    cited: tuple[Any, str | None] | None = (
        OriginRegistry.objects.filter(pk=request.o_tag, registered_by=agent)
        .annotate(principal_text=Cast("principal", TextField()))
        .values_list("pk", "principal_text")
        .first()
    )
    if cited is None:
        raise BrokerRefusal(404, "unknown_origin", "no such O-Tag registered by you", field="o_tag")
    return cited


#: The chain's principal as its stored JSON text: the text is the key of the ACL's cache.
_PRINCIPAL_TEXT = Cast(F("o_tag__principal"), TextField())
#: A parent call's task: a knock-on call inherits it.
_PARENT_TASK = Subquery(ToolCall.objects.filter(r_tag=OuterRef("pk")).values("task_id")[:1])
#: The delegation that made a task (None: the task is not delegated work).
_DELEGATION = Subquery(Delegation.objects.filter(task=OuterRef("pk")).values("pk")[:1])


@lru_cache(maxsize=4096)
def principal_parsed(text: str) -> dict[str, Any]:
    """A principal's JSON, parsed once per distinct text (read-only for every reader)."""
    return dict(json.loads(text))


def _chain_tags(ctx: CallContext) -> ChainTags:
    """The Tag Trinity of the call: a knock-on call inherits its parent's O-Tag, chain and V-Pol
    (at the chain's version); a new chain takes the origin it names (registering it), the O-Tag
    it cites, or its task's, else registers the agent's own initiative as its origin."""
    if ctx.parent is not None:
        return ChainTags(
            o_tag_id=ctx.parent.o_tag_id,
            chain_id=ctx.parent.chain_id,
            vpol_id=ctx.parent.vpol_id,
            vpol_version=ctx.parent.vpol_version,
        )
    req, origin = ctx.request, None
    if req.origin is not None:
        origin = origin_new(
            agent=ctx.agent,
            origin_type=req.origin["origin_type"],
            source_ref=req.origin["source_ref"],
            metadata=req.origin.get("metadata") or {},
        )
    elif req.o_tag is not None:
        o_tag_id = req.o_tag
    elif ctx.task is not None and ctx.task.o_tag_id is not None:
        o_tag_id = ctx.task.o_tag_id
    else:
        origin = origin_new(
            agent=ctx.agent,
            origin_type=OriginRegistry.OriginType.AGENT,
            source_ref=f"agent:{ctx.agent.agent_id}"
            + (f":task:{ctx.task.task_id}" if ctx.task else ""),
            metadata={"note": "no origin given: the agent's own initiative"},
        )
    if origin is not None:
        o_tag_id = origin.id
    return ChainTags(
        o_tag_id=o_tag_id,
        origin=origin,
        vpol_id=ctx.vpol.id if ctx.vpol else None,
        vpol_version=ctx.vpol.version if ctx.vpol else None,
    )


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
