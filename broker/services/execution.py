"""Executing a decided call: the one path for auto-executed and approved calls.

``call_execute`` runs the outbound filter and the handler (``call_run``), records the outcome
(once), shows it on the board and sends the alignment signal (``call_executed``). An auto-executed
call reaches it right after its decision is recorded; an approved one after
``approved_call_execute`` claims it, so it runs at most once however often the job is retried
(the recovery sweep in ``approvals`` makes sure it runs at least once). A read without side
effects (``runs_before_recording``) runs ``call_run`` before it is recorded and is written whole
in one statement. A call whose process died mid-run is sealed by ``calls_interrupted_seal``."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models.functions import Coalesce
from django.utils import timezone

from brainframe.choices import RiskLevel
from brainframe.events import Event, publish_tool_call
from brainframe.models import ApprovalRequest, Tool, ToolCall
from brainframe.services.trust.alignment import alignment_signal
from brainframe.telemetry import execution_observed

from ..audit.record import Ran, record_outcome, record_outcome_patiently
from ..handlers import handler_timeout, run_handler
from ..pipeline.outbound import OutboundFilterUnavailable, prepare_outbound

log = logging.getLogger(__name__)

Status = ApprovalRequest.Status


#: Handlers whose read tools have no side effects: a ``sql`` read runs in a READ ONLY
#: transaction, a ``function`` read tool computes an answer.
SIDE_EFFECT_FREE_HANDLERS = frozenset({Tool.HandlerType.FUNCTION, Tool.HandlerType.SQL})


def runs_before_recording(tool: Tool) -> bool:
    """Whether an auto-executed call of ``tool`` may run before its decision is recorded, and
    then be recorded whole (decision, audit rows and outcome) in one statement.

    Only a read tool with a ``function`` or ``sql`` handler that sends nothing out (not an
    external channel): running it changes nothing, so if the audit cannot be written the call
    is refused (503) and its result withheld — no result leaves unaudited, nothing happened.
    Every other call keeps "audit first, then execute".
    """
    return (
        tool.risk_level == RiskLevel.READ
        and tool.handler_type in SIDE_EFFECT_FREE_HANDLERS
        and not tool.external_channel
    )


def call_run(
    *, tool: Tool, arguments: dict[str, Any], call_id: Any, recorded_input: dict[str, Any]
) -> Ran:
    """The outbound PII filter, then the handler (if the filter cannot run, nothing is sent and
    the call fails: fail closed). Nothing is written here."""
    try:
        outbound = prepare_outbound(tool=tool, arguments=arguments, call_id=call_id)
    except OutboundFilterUnavailable as exc:
        return Ran(ToolCall.Outcome.FAILED, None, str(exc), 0)
    result = run_handler(tool=tool, arguments=outbound.arguments, call_id=call_id)
    return Ran(
        result.outcome,
        result.output,
        result.error,
        result.duration_ms,
        # What actually left, when the filter or a reviewer changed it (the input stays as sent).
        executed_arguments=outbound.arguments if outbound.arguments != recorded_input else None,
        outbound_findings=outbound.redactions,
    )


def call_executed(
    call: ToolCall, *, events: tuple[Event, ...] = (), reviewed: bool = False
) -> None:
    """After a call's outcome is written: its row on open boards, with ``events`` (the
    decision's Guardian assessment) in front of it, and the alignment signal when the rating
    can matter at once — a reviewed call, or one that did not succeed (a failure can demote). A
    routine success is rated by the nightly job."""
    execution_observed(call)
    publish_tool_call(call, after=events)
    if reviewed or call.outcome != ToolCall.Outcome.SUCCEEDED:
        alignment_signal(call_id=call.pk)


def call_execute(
    *,
    call: ToolCall,
    tool: Tool,
    arguments: dict[str, Any],
    events: tuple[Event, ...] = (),
    reviewed: bool = False,
) -> None:
    """Run a recorded call (its outcome is ``pending``) and record what happened, once: the
    outbound filter and handler (``call_run``), the outcome written with its hash, then
    ``call_executed``."""
    ran = call_run(tool=tool, arguments=arguments, call_id=call.id, recorded_input=call.input)
    try:
        written = record_outcome_patiently(call, **ran.values())  # its event appended with it
        if written is not None:
            events = (*events, written)
    except DatabaseError:
        # The handler ran; its result stays in memory for the answer, and the interrupted-call
        # seal records the loss once the database is back.
        log.exception("could not record the outcome of call %s", call.id)
        call.outcome, call.output, call.error = ran.outcome, ran.output, ran.error
        call.duration_ms = ran.duration_ms
    call_executed(call, events=events, reviewed=reviewed)


def approved_call_execute(*, approval_id: Any) -> str:
    """Run an approved (or modified) call exactly once. Safe to call again and again.

    Returns what happened: ``executed``, ``already_claimed``, or ``not_approved``.
    """
    approval = (
        ApprovalRequest.objects.select_related("tool", "tool_call__agent")
        .filter(pk=approval_id)
        .first()
    )
    if approval is None:
        return "not_approved"
    if approval.status not in (Status.APPROVED, Status.MODIFIED) or approval.tool_call is None:
        return "not_approved"
    call = approval.tool_call
    # The claim: only one caller moves the outcome from not_run to pending; executed_at marks
    # when it started until the outcome overwrites it (see calls_interrupted_seal).
    claimed = ToolCall.objects.filter(pk=call.pk, outcome=ToolCall.Outcome.NOT_RUN).update(
        outcome=ToolCall.Outcome.PENDING, executed_at=timezone.now()
    )
    if not claimed:
        return "already_claimed"
    call.outcome = ToolCall.Outcome.PENDING
    modified = approval.modified_arguments if approval.status == Status.MODIFIED else None
    arguments = modified if modified is not None else approval.arguments
    call_execute(call=call, tool=approval.tool, arguments=arguments, reviewed=True)
    return "executed"


INTERRUPTED = (
    "interrupted: the process running it was lost before it reported back; it may or may not "
    "have taken effect, and it is not run again (at most once)"
)


def calls_interrupted_seal(
    *, now: Any = None, grace: timedelta = timedelta(minutes=2)
) -> list[str]:
    """Seal calls that started but never reported back (a worker or web process killed mid-run).

    A call is running while its outcome is ``pending``; it started when it was decided (an
    auto-executed call) or claimed (an approved one, ``executed_at``). Once it has been running
    longer than its handler's timeout plus ``grace``, nothing can still be working on it: its
    outcome becomes ``failed`` with the reason, written only if it is still ``pending`` (a late
    result and this seal cannot both land). It is never re-run: nothing is executed twice.
    """
    now = now or timezone.now()
    candidates = (
        ToolCall.objects.filter(outcome=ToolCall.Outcome.PENDING)
        .annotate(started=Coalesce("executed_at", "timestamp"))
        .filter(started__lte=now - grace)
        .select_related("tool", "agent")
    )
    sealed = []
    for call in candidates:
        limit = timedelta(seconds=handler_timeout(call.tool) if call.tool else 0) + grace
        if call.started > now - limit:
            continue
        written = record_outcome(
            call, outcome=ToolCall.Outcome.FAILED, output=None, error=INTERRUPTED, duration_ms=0
        )
        if written is not None:
            sealed.append(str(call.pk))
            publish_tool_call(call, after=(written,))
    return sealed
