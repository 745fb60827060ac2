"""Writing the audit: a decision's rows in one statement before anything runs, then its outcome
once, sealed with its hash."""

from __future__ import annotations

import json
import logging
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError, connection, models, transaction
from django.utils import timezone

from brainframe.events import (
    ApprovalCreated,
    Event,
    call_outcome_event,
    call_refusal_event,
    event_log_rows,
)
from brainframe.models import ApprovalRequest, ToolCall
from brainframe.services.memory.indexing import classify_origin_after_commit, index_after_commit
from brainframe.services.registry.tools import call_summary

from ..pipeline.context import CallContext, Outcome, StaleSnapshot, Verdict
from .hashing import (
    CONTENT_FIELDS,
    HASH_SCHEME,
    arguments_hash,
    compute_content_hash,
    compute_outcome_hash,
    json_default,
)
from .rows import tables

log = logging.getLogger(__name__)
# Raised by brainframe_record_decision when what a decision was made under is no longer current.
STALE_SNAPSHOT = "RB001"

_DECISIONS = {
    Outcome.EXECUTE: ToolCall.Decision.EXECUTED,
    Outcome.EXECUTE_POST_REVIEW: ToolCall.Decision.EXECUTED_POST_REVIEW,
    Outcome.PENDING: ToolCall.Decision.PENDING_APPROVAL,
    Outcome.DENY: ToolCall.Decision.DENIED,
    Outcome.INVALID: ToolCall.Decision.INVALID,
    Outcome.UNKNOWN_TOOL: ToolCall.Decision.INVALID,
}


_REFUSALS = frozenset({Outcome.DENY, Outcome.INVALID, Outcome.UNKNOWN_TOOL})


@dataclass(frozen=True)
class Recorded:
    call: ToolCall
    reason_id: uuid.UUID  # the R-Tag
    approval: ApprovalRequest | None
    #: What the statement appended to the event log (to publish once it commits).
    events: tuple[Event, ...] = ()


def _entity_edges(ctx: CallContext) -> list[tuple[str, str, str]]:
    """(entity_type, entity_id, relationship) for what this decision touched."""
    tool = ctx.tool
    touched = "read" if tool is None or tool.risk_level == "read" else "updated"
    edges: list[tuple[str, str, str]] = []
    if tool is not None:
        edges.append(("tool", tool.tool_id, "referenced"))
    if ctx.task is not None:
        edges.append(("agent_task", str(ctx.task.task_id), "referenced"))
    for key, value in ctx.request.arguments.items():
        # participant_id, staff_id, shift_id… name the business entities a call acts on.
        if key.endswith("_id") and isinstance(value, str | int) and str(value):
            edges.append((key[:-3], str(value)[:120], touched))
        elif key.endswith("_ids") and isinstance(value, list):
            edges.extend(
                (key[:-4], str(v)[:120], touched) for v in value[:50] if isinstance(v, str | int)
            )
    return edges


def _summary(ctx: CallContext) -> str:
    assert ctx.tool is not None
    return call_summary(agent_name=ctx.agent.name, tool=ctx.tool, arguments=ctx.request.arguments)


def record_decision(
    ctx: CallContext,
    verdict: Verdict,
    *,
    ran: Ran | None = None,
    events: tuple[Event, ...] = (),
) -> Recorded:
    """Write the decision's audit rows atomically. Raises DatabaseError if the audit is down.

    Only writes: the context carries the resolved tags (``ctx.tags``, from ``prepare``). Every
    row is built here and written by one call of ``brainframe_record_decision``: the origin
    (when the call registers one), the reason and its edges, the chained tool call and the
    approval request (when the verdict asks for one). ``ran``: the outcome of a call that ran
    before it was recorded (a read without side effects), written with the decision, sealed.
    ``events``: the decision's own (its Guardian assessment), appended to the event log by the
    same statement with the refusal, the approval request or the outcome it records.
    """
    req = ctx.request
    tags = ctx.tags
    if tags is None:
        raise ValueError("the call's tags were not resolved (prepare the context first)")
    reasons, edges_table, calls = tables()
    now = timezone.now()
    origin, o_tag_id = tags.origin, tags.o_tag_id
    vpol_id, vpol_version = tags.vpol_id, tags.vpol_version
    reason_id = uuid.uuid4()
    tool_id = ctx.tool.tool_id if ctx.tool is not None else None
    reason = reasons.values(
        {
            "id": reason_id,
            "parent_id": ctx.parent.id if ctx.parent is not None else None,
            "o_tag_id": o_tag_id,
            "vpol_id": vpol_id,
            "vpol_version": vpol_version,
            "chain_id": tags.chain_id or reason_id,
            "agent_id": ctx.agent.agent_id,
            "tool_id": tool_id,
            "thought": req.reason,
            "confidence": req.confidence,
            "risk": ctx.threat.get("risk"),
        },
        now,
    )
    edges = [
        edges_table.row(
            edges_table.values(
                {"reason_id": reason_id, "entity_type": t, "entity_id": i, "relationship": r},
                now,
            )
        )
        for t, i, r in dict.fromkeys(_entity_edges(ctx))
    ]
    findings = [{"source": f.source, "detail": f.detail} for f in ctx.findings]
    values = calls.values(
        {
            "id": ctx.call_id,
            "agent_id": ctx.agent.agent_id,
            "tool_id": tool_id,
            "requested_tool_id": req.tool_id[:200],
            "task_id": ctx.task.task_id if ctx.task is not None else None,
            "r_tag_id": reason_id,
            "o_tag_id": o_tag_id,
            "vpol_id": vpol_id,
            "input": req.arguments,
            "decision": _DECISIONS[verdict.outcome],
            "decision_code": verdict.code[:80],
            "decision_detail": verdict.detail,
            "decision_errors": list(verdict.errors),
            "threat_assessment": {**ctx.threat, "findings": findings} if findings else ctx.threat,
            "idempotency_key": req.idempotency_key,
            "request_hash": req.request_hash,
            "face": req.face,
            "outcome": ToolCall.Outcome.PENDING if verdict.executes else ToolCall.Outcome.NOT_RUN,
            "hash_scheme": HASH_SCHEME,
            "timestamp": now,
        },
        now,
    )
    content_hash = compute_content_hash({f: values[f] for f in CONTENT_FIELDS})
    if ran is not None:
        outcome = _outcome_values(**ran.values())
        outcome["outcome_hash"] = compute_outcome_hash(content_hash, outcome)
        values.update(outcome)
    document: dict[str, Any] = {
        "reason": reasons.row(reason),
        "edges": edges,
        "call": calls.row(values),
        "content_hash": content_hash,
    }
    call = calls.instance(values)
    call.__dict__["_content_hash"] = content_hash  # what its outcome is sealed to (scheme 3)
    # The objects the caller already holds: no query to reach them later.
    call.agent = ctx.agent
    if ctx.tool is not None:
        call.tool = ctx.tool
    approval = None
    if verdict.approval_kind:
        approval = _approval(ctx, verdict, call, reason_id, vpol_id, vpol_version, now)
    if origin is not None:
        document["origin"] = _row(origin, now)
    if approval is not None:
        document["approval"] = _row(approval, now)
    logged = list(events)
    if verdict.outcome in _REFUSALS:
        logged.append(call_refusal_event(call))
    if approval is not None:
        logged.append(ApprovalCreated.of(approval))
    if ran is not None:
        logged.append(call_outcome_event(call))
    rows = event_log_rows(logged, now)
    if rows:
        document["events"] = rows
    # Inside a caller's transaction, a savepoint keeps a refused write (a duplicate
    # Idempotency-Key) from spoiling it; on its own the one statement is its own transaction.
    expect = ctx.expect
    if expect is not None:  # checked first by the statement: nothing written unless current
        document["expect"] = {"agent": expect.agent_generation, "registry": expect.registry_token}
    atomic = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with atomic, connection.cursor() as cursor:
            # The document as JSON text cast in the statement: psycopg's Jsonb adapter costs
            # twice the serialisation again on the way (0.42 → 0.13 ms per call, in process),
            # and orjson a tenth of the standard library's.
            cursor.execute(
                "SELECT out_seq, out_prev_hash, out_row_hash"
                " FROM brainframe_record_decision(%s::jsonb)",
                [_document_json(document)],
            )
            call.seq, call.prev_hash, call.row_hash = cursor.fetchone()
    except DatabaseError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == STALE_SNAPSHOT:
            raise StaleSnapshot(str(exc)) from exc
        raise
    if expect is not None:
        expect.verified = True
    for written in (origin, approval):
        if written is not None:
            written._state.adding, written._state.db = False, "default"
    if origin is not None:
        classify_origin_after_commit(origin.id)
    index_after_commit("reason", [reason_id])
    return Recorded(call=call, reason_id=reason_id, approval=approval, events=tuple(logged))


def _row(instance: models.Model, now: Any) -> dict[str, Any]:
    """The row of a model instance as jsonb_populate_record reads it (column → value)."""
    row = {}
    for f in instance._meta.concrete_fields:
        if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False):
            setattr(instance, f.attname, now)
        row[f.column] = getattr(instance, f.attname)
    return row


def _dumps(value: Any) -> str:
    return json.dumps(value, default=json_default)


def _document_json(document: dict[str, Any]) -> str:
    """A decision's document as JSON text, as the standard library would write it for the
    database (orjson writes NaN and Infinity as null, but none reaches here: the hashed values
    were refused while hashing (strict ``canonical_json``), and the request's while it was
    parsed); an integer beyond 64 bits, which orjson refuses, goes to the standard library."""
    try:
        return orjson.dumps(document, default=json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return _dumps(document)


def _approval(
    ctx: CallContext,
    verdict: Verdict,
    call: ToolCall,
    reason_id: uuid.UUID,
    vpol_id: Any,
    vpol_version: int | None,
    now: Any,
) -> ApprovalRequest:
    tool = ctx.tool
    assert tool is not None
    minutes = tool.approval_timeout_minutes or settings.RABS_APPROVAL_TIMEOUT_MINUTES
    senior = verdict.reviewer_group == ApprovalRequest.ReviewerGroup.SENIOR
    tags = [tool.context_bucket, f"risk:{tool.risk_level}", f"decision:{verdict.code}"]
    tags += [f.source for f in ctx.findings]
    return ApprovalRequest(
        tool=tool,
        agent=ctx.agent,
        tool_call=call,
        task=ctx.task,
        r_tag_id=reason_id,
        vpol_id=vpol_id,
        vpol_version=vpol_version,
        kind=verdict.approval_kind,
        arguments=ctx.request.arguments,
        arguments_hash=arguments_hash(ctx.request.arguments),
        reason=ctx.request.reason,
        summary=_summary(ctx),
        risk_level=tool.risk_level,
        confidence=ctx.request.confidence,
        tags=tags[:20],
        # Strict findings start with the senior group: "escalated" from the outset.
        status=ApprovalRequest.Status.ESCALATED if senior else ApprovalRequest.Status.PENDING,
        reviewer_group=verdict.reviewer_group,
        timeout_at=now + timedelta(minutes=minutes),
    )


def record_outcome(
    call: ToolCall,
    *,
    outcome: str,
    output: Any,
    error: str,
    duration_ms: int,
    executed_arguments: dict[str, Any] | None = None,
    outbound_findings: list[dict[str, Any]] | None = None,
) -> Event | None:
    """Write a call's execution result, once: the outcome's event, appended with it; None if
    the outcome was already written."""
    values = _outcome_values(
        outcome=outcome,
        output=output,
        error=error,
        duration_ms=duration_ms,
        executed_arguments=executed_arguments,
        outbound_findings=outbound_findings,
    )
    values["outcome_hash"] = compute_outcome_hash(_anchor(call), values)
    event = call_outcome_event(
        call, outcome=outcome, duration_ms=values["duration_ms"], error=values["error"]
    )
    # One call of a function whose plan the connection keeps (the hot path of every executed
    # call); the database's append-only trigger still allows only these columns to change,
    # once. The outcome's event is appended by the same call, only if the outcome was written.
    document = {**values, "events": event_log_rows([event], values["executed_at"])}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT brainframe_record_outcome(%s, %s::jsonb)", [call.pk, _document_json(document)]
        )
        written = cursor.fetchone()[0]
    if not written:
        return None
    for key, value in values.items():
        setattr(call, key, value)
    return event


@dataclass(frozen=True)
class Ran:
    """What a call's execution produced, before it is written."""

    outcome: str
    output: Any
    error: str
    duration_ms: int
    executed_arguments: dict[str, Any] | None = None
    outbound_findings: list[dict[str, Any]] | None = None

    def values(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "output": self.output,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "executed_arguments": self.executed_arguments,
            "outbound_findings": self.outbound_findings,
        }


def _outcome_values(
    *,
    outcome: str,
    output: Any,
    error: str,
    duration_ms: int,
    executed_arguments: dict[str, Any] | None,
    outbound_findings: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "output": output,
        "error": error[:5000],
        "duration_ms": duration_ms,
        "executed_at": timezone.now(),
        "executed_arguments": executed_arguments,
        "outbound_findings": outbound_findings or [],
    }


def _anchor(call: ToolCall) -> str:
    """What the call's outcome hash is sealed to (see ``hashing.outcome_anchor``)."""
    if call.hash_scheme < 3:
        return call.row_hash
    cached = call.__dict__.get("_content_hash")
    if cached is None:
        cached = compute_content_hash({f: getattr(call, f) for f in CONTENT_FIELDS})
    return str(cached)


#: How long an execution keeps trying to write its outcome while the database is unreachable (a
#: restart, a failover) before it gives up; the interrupted-call seal waits longer than this.
OUTCOME_PATIENCE_SECONDS = 20.0


def record_outcome_patiently(call: ToolCall, **values: Any) -> Event | None:
    """``record_outcome``, retried with backoff while the database is unreachable, so that a
    handler's real result survives a database restart. Inside a transaction it tries once."""
    deadline = time.monotonic() + OUTCOME_PATIENCE_SECONDS
    delay = 0.1
    while True:
        try:
            return record_outcome(call, **values)
        except DatabaseError:
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            log.warning("outcome of call %s not written yet (database unreachable)", call.pk)
            connection.close()  # a connection the restart broke is not reused
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def record_cancelled(call: ToolCall, reason: str) -> bool:
    """A call that will never run (rejected, expired): seal that as its outcome, once."""
    values: dict[str, Any] = {
        "outcome": ToolCall.Outcome.CANCELLED,
        "output": None,
        "error": reason[:5000],
        "duration_ms": None,
        "executed_at": None,
        "executed_arguments": None,
        "outbound_findings": [],
    }
    values["outcome_hash"] = compute_outcome_hash(_anchor(call), values)
    written = ToolCall.objects.filter(pk=call.pk, outcome=ToolCall.Outcome.NOT_RUN).update(**values)
    if written:
        for key, value in values.items():
            setattr(call, key, value)
    return bool(written)
