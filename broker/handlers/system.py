"""Callables behind the broker's own tools (``brainframe.safety.policy.baseline.SYSTEM_TOOLS``)."""

from __future__ import annotations

import ast
import hashlib
import json
import uuid
from typing import Any

from brainframe.models import ApprovalRequest, ToolCall
from brainframe.services.access.grants import GrantRefused, grant_apply
from brainframe.services.ledger.ledgers import LedgerRefusal
from brainframe.services.work.delegation import delegate
from brainframe.services.work.supervisors import SupervisorError, supervisor_command

from .base import HandlerFailure
from .function import ToolFunction


def capability_grant(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """Apply what an approved ``rabs.capability.request`` asked for."""
    try:
        return grant_apply(call_id=call_id, arguments=args)
    except GrantRefused as exc:
        raise HandlerFailure(str(exc)) from exc


def agent_restart_self(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An approved ``agent.restart_self``: the calling agent's supervisor restarts its worker;
    the command records the reviewer who approved it and the call."""
    call = ToolCall.objects.select_related("agent").get(pk=call_id)
    approval = ApprovalRequest.objects.filter(tool_call=call).select_related("decided_by").first()
    approver = approval.decided_by if approval is not None else None
    try:
        command = supervisor_command(
            agent=call.agent,
            action="restart",
            force=bool(args.get("force")),
            reason=args["reason"],
            requested_by=approver,
            call=call,
        )
    except SupervisorError as exc:
        raise HandlerFailure(f"{exc.code}: {exc.detail}") from exc
    return {
        "restarted": True,
        "approved_by": approver.get_username() if approver is not None else None,
        "supervisor": command.answer,
    }


def agent_update_handler(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An approved ``agent.update_handler``: the change is recorded (its digest, who approved);
    the agent's service stores it on this outcome and runs it from its next worker. Code is
    parsed here, never run: it runs only in the agent's own sandbox."""
    code = args.get("code")
    if code is not None:
        if args["name"] == "loop":
            raise HandlerFailure("the loop handler takes configuration only")
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            raise HandlerFailure(f"code does not parse: {exc.msg} (line {exc.lineno})") from exc
        if not any(
            isinstance(node, ast.FunctionDef) and node.name == "handle" for node in tree.body
        ):
            raise HandlerFailure("code must define handle(...)")
    call = ToolCall.objects.get(pk=call_id)
    approval = ApprovalRequest.objects.filter(tool_call=call).select_related("decided_by").first()
    approver = approval.decided_by if approval is not None else None
    digest = hashlib.sha256(
        json.dumps(
            {"name": args["name"], "config": args.get("config"), "code": code}, sort_keys=True
        ).encode()
    ).hexdigest()[:16]
    return {
        "name": args["name"],
        "digest": digest,
        "approved_by": approver.get_username() if approver is not None else None,
    }


def agents_delegate(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    """An executed ``agents.delegate``: the worker's task and thread."""
    try:
        return delegate(call_id=call_id, arguments=args)
    except LedgerRefusal as exc:
        raise HandlerFailure(f"{exc.code}: {exc.detail}") from exc


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {
    "rabs.capability_grant": capability_grant,
    "rabs.agent_restart_self": agent_restart_self,
    "rabs.agents_delegate": agents_delegate,
    "rabs.agent_update_handler": agent_update_handler,
}
