"""Agents' supervisors (seed 004 "Supervisor"): where each answers, its health, and the restarts
and stops sent to it — by a reviewer approving the agent's own ``agent.restart_self`` call, or by
staff from the board. Every command is recorded (``SupervisorCommand``) with who asked and what
the supervisor answered.

The constitution's LOOPBACK_ONLY rule binds here too: a control URL is a loopback address, or a
host named in ``RABS_CONTROL_GATE_HOSTS`` (the gate's control lane of the compose deployment);
any other is refused when it is saved and again before each request.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from brainframe.models import Agent, AgentSupervisor, SupervisorCommand, ToolCall
from brainframe.services.access.credentials import secret_open, secret_seal
from brainframe.services.registry.agents import agent_changed

TIMEOUT_SECONDS = 90.0  # a drain waits for the call in hand (the supervisor allows 60 s)
HEALTH_TIMEOUT_SECONDS = 3.0


class SupervisorError(Exception):
    def __init__(self, code: str, detail: str, field: str = "") -> None:
        super().__init__(detail)
        self.code, self.detail, self.field = code, detail, field


def control_url_problem(url: str) -> str:
    """Why ``url`` may not be a control URL ("" when it may)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "an http(s) URL with a host is required"
    host = parts.hostname
    if host in settings.RABS_CONTROL_GATE_HOSTS or host == "localhost":
        return ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return (
            f"{host} is not a loopback address: control endpoints are loopback-only "
            "(constitution LOOPBACK_ONLY)"
        )
    return ""


def supervisor_set(*, agent: Agent, control_url: str, token: str | None) -> AgentSupervisor:
    """Record where ``agent``'s supervisor answers; ``token`` None keeps the one stored."""
    problem = control_url_problem(control_url)
    if problem:
        raise SupervisorError("constitution:LOOPBACK_ONLY", problem, "control_url")
    existing = AgentSupervisor.objects.filter(agent=agent).first()
    if token is None and existing is None:
        raise SupervisorError("required", "the supervisor's bearer token is required", "token")
    supervisor = existing or AgentSupervisor(agent=agent)
    supervisor.control_url = control_url.rstrip("/")
    if token is not None:
        if len(token) < 16:
            raise SupervisorError("too_short", "a bearer token of 16 characters or more", "token")
        supervisor.token_encrypted = secret_seal(token)
    supervisor.save()
    return supervisor


def _request(supervisor: AgentSupervisor, method: str, path: str, **kwargs: Any) -> Any:
    problem = control_url_problem(supervisor.control_url)
    if problem:
        raise SupervisorError("constitution:LOOPBACK_ONLY", problem, "control_url")
    token = secret_open(supervisor.token_encrypted)
    if token is None:
        raise SupervisorError(
            "token_unreadable", "the stored token was sealed under another key: set it again"
        )
    try:
        response = httpx.request(
            method,
            supervisor.control_url + path,
            headers={"Authorization": f"Bearer {token}"},
            follow_redirects=False,
            **kwargs,
        )
    except httpx.HTTPError as exc:
        raise SupervisorError("supervisor_unreachable", f"{type(exc).__name__}: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        body = {"text": response.text[:500]}
    if response.status_code >= 400:
        raise SupervisorError(
            "supervisor_refused", f"the supervisor answered {response.status_code}: {body}"
        )
    return body


def supervisor_command(
    *,
    agent: Agent,
    action: str,
    force: bool,
    reason: str,
    requested_by: AbstractBaseUser | None = None,
    call: ToolCall | None = None,
) -> SupervisorCommand:
    """Send a restart or a stop to ``agent``'s supervisor and record it, answered or not."""
    if action not in SupervisorCommand.Action.values:
        raise SupervisorError("invalid_action", f"unknown action {action!r}", "action")
    supervisor = AgentSupervisor.objects.filter(agent=agent).first()
    if supervisor is None:
        raise SupervisorError("no_supervisor", f"no supervisor is registered for {agent.agent_id}")
    reason = (reason or "unspecified")[:200]
    try:
        answer = _request(
            supervisor,
            "POST",
            f"/control/{action}",
            json={"reason": reason, "force": force},
            timeout=TIMEOUT_SECONDS,
        )
        ok, error = True, None
    except SupervisorError as exc:
        answer, ok, error = {"code": exc.code, "detail": exc.detail}, False, exc
    with transaction.atomic():
        command = SupervisorCommand.objects.create(
            agent=agent,
            action=action,
            force=force,
            reason=reason,
            requested_by=requested_by,  # type: ignore[misc]  # the project's user model
            call=call,
            ok=ok,
            answer=answer,
        )
        AgentSupervisor.objects.filter(pk=supervisor.pk).update(last_command=command)
    if ok:
        supervisor_check(supervisor=supervisor)  # the card shows the worker as it is now
    agent_changed(agent=agent)
    if error is not None:
        raise error
    return command


def supervisor_check(*, supervisor: AgentSupervisor) -> AgentSupervisor:
    """Ask the supervisor how it is (``GET /healthz``) and keep the answer for the board."""
    try:
        supervisor.health = _request(supervisor, "GET", "/healthz", timeout=HEALTH_TIMEOUT_SECONDS)
        supervisor.reachable, supervisor.error = True, ""
    except SupervisorError as exc:
        supervisor.reachable, supervisor.error = False, exc.detail
    supervisor.checked_at = timezone.now()
    supervisor.save(update_fields=["health", "reachable", "error", "checked_at"])
    return supervisor


def supervisors_check() -> dict[str, int]:
    """Every registered supervisor's health (the beat's ``check_supervisors`` job)."""
    counts = {"reachable": 0, "unreachable": 0}
    for supervisor in AgentSupervisor.objects.select_related("agent"):
        before = supervisor.reachable
        supervisor_check(supervisor=supervisor)
        counts["reachable" if supervisor.reachable else "unreachable"] += 1
        if before != supervisor.reachable:
            agent_changed(agent=supervisor.agent)
    return counts
