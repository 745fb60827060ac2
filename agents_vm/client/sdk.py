"""The agent-side SDK: a client for the Tools Broker that signs every request (RABS-HMAC),
retries network failures without ever executing a call twice, and returns typed outcomes.

    client = BrokerClient("http://127.0.0.1:8000", agent_id="henry", secret=SECRET)
    outcome = client.call_tool("roster.shift.read", {"date_from": "2026-03-02",
                                                     "date_to": "2026-03-02"},
                               reason="check Monday's cover")
    match outcome:
        case Executed(result=result): ...
        case PendingApproval() as pending: outcome = client.wait(pending, timeout=600)
        case Denied(code=code, detail=detail): ...          # re-plan from the reason
        case InvalidArguments(errors=errors): ...           # fix the arguments at these paths

Imports nothing from the control plane: it speaks only HTTP, as a VM would.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from typing import Any
from urllib.parse import urlencode

import httpx

from agents_vm.client.outcomes import (
    BrokerError,
    Denied,
    Executed,
    Expired,
    InvalidArguments,
    Outcome,
    PendingApproval,
    Rejected,
    outcome_from,
)
from agents_vm.client.signing import sign

# The SDK's public names: the client, and the outcomes it returns.
__all__ = [
    "BrokerClient",
    "BrokerError",
    "Denied",
    "Executed",
    "Expired",
    "InvalidArguments",
    "Outcome",
    "PendingApproval",
    "Rejected",
    "outcome_from",
]


class BrokerClient:
    """Signed, retrying access to ``/api/v1/`` for one agent."""

    def __init__(
        self,
        base_url: str,
        *,
        agent_id: str,
        secret: str,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.25,
        transport: str = "rest",
        mcp_token: str = "",
    ) -> None:
        """``transport``: ``rest`` (every request signed) or ``mcp``: tool calls, the tool
        list and a call's status over the broker's MCP face with ``mcp_token`` (a bearer token,
        ``manage.py agent_key <agent> --mcp``), the rest (tasks, turns, memory) signed REST."""
        self.base_url = base_url.rstrip("/")
        self.agent_id = agent_id
        self.secret = secret.encode()
        self.retries = retries
        self.backoff = backoff
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout)
        self.mcp: Any = None
        if transport == "mcp":
            if not mcp_token:
                raise ValueError("transport mcp needs a bearer token (mcp_token)")
            from agents_vm.client.mcp import MCPTools  # the mcp client loads only when it is used

            self.mcp = MCPTools(self.base_url, token=mcp_token, timeout=timeout)
        elif transport != "rest":
            raise ValueError(f"transport is rest or mcp, not {transport!r}")

    def close(self) -> None:
        self.http.close()
        if self.mcp is not None:
            self.mcp.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport ---------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        headers: dict[str, str] | None = None,
        files: Any = None,
        data: Any = None,
    ) -> httpx.Response:
        """Send a signed request; retry transport failures and 503 answers (a fresh nonce each
        time)."""
        if files is not None:
            built = self.http.build_request(method, path, files=files, data=data)
            body, content_type = built.read(), built.headers["Content-Type"]
        else:
            body = b"" if payload is None else json.dumps(payload).encode()
            content_type = "application/json"
        attempt = 0
        while True:
            ts, nonce = str(int(time.time())), secrets.token_hex(16)
            signature = sign(self.secret, method, path, ts, nonce, body)
            all_headers = {
                "Authorization": f"RABS-HMAC agent={self.agent_id},ts={ts},nonce={nonce},"
                f"sig={signature}",
                "Content-Type": content_type,
                **(headers or {}),
            }
            try:
                response = self.http.request(
                    method, path, content=body or None, headers=all_headers
                )
            except httpx.TransportError:
                attempt += 1
                if attempt > self.retries:
                    raise
                time.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            # 503: a dependency of the broker (its database, the audit, the queue) was down and
            # nothing was done, so asking again (same Idempotency-Key) is safe.
            if response.status_code == 503 and attempt < self.retries:
                attempt += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
                continue
            return response

    def _json(self, response: httpx.Response, ok: tuple[int, ...] = (200, 201)) -> Any:
        body = response.json() if response.content else {}
        if response.status_code not in ok:
            raise BrokerError(
                response.status_code,
                body.get("code", "error"),
                body.get("detail", response.text[:200]),
                body,
            )
        return body

    # --- tool calls --------------------------------------------------------------------------

    def _over_mcp(self, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """A body from the MCP transport; its refusals raised as REST's are."""
        # loaded with the transport, only when it is used
        from agents_vm.client.mcp import MCPRefusal

        try:
            body: dict[str, Any] = fn(*args, **kwargs)
        except MCPRefusal as refusal:
            raise BrokerError(refusal.status, refusal.code, refusal.detail, refusal.body) from None
        return body

    def tools(self) -> list[dict[str, Any]]:
        if self.mcp is not None:
            return list(self.mcp.tools())
        return list(self._json(self.request("GET", "/api/v1/tools/")))

    def call_tool(
        self,
        tool_id: str,
        arguments: dict[str, Any],
        *,
        reason: str,
        confidence: float | None = None,
        task_id: str | None = None,
        parent_r_tag: str | None = None,
        origin: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Outcome:
        """Ask for a tool call. A retry after a lost answer reuses the idempotency key, so the
        broker answers as it did the first time instead of executing again."""
        if self.mcp is not None:
            return outcome_from(
                self._over_mcp(
                    self.mcp.call_tool,
                    tool_id,
                    arguments,
                    reason=reason,
                    confidence=confidence,
                    task_id=task_id,
                    parent_r_tag=parent_r_tag,
                    origin=origin,
                    idempotency_key=idempotency_key or str(uuid.uuid4()),
                )
            )
        payload: dict[str, Any] = {"tool_id": tool_id, "arguments": arguments, "reason": reason}
        for key, value in (
            ("confidence", confidence),
            ("task_id", task_id),
            ("parent_r_tag", parent_r_tag),
            ("origin", origin),
        ):
            if value is not None:
                payload[key] = value
        key = idempotency_key or str(uuid.uuid4())
        response = self.request(
            "POST", "/api/v1/tool-calls/", payload, headers={"Idempotency-Key": key}
        )
        body = response.json() if response.content else {}
        if "status" in body:
            return outcome_from(body)
        raise BrokerError(
            response.status_code, body.get("code", "error"), body.get("detail", ""), body
        )

    def restart_self(self, reason: str, *, force: bool = False) -> Outcome:
        """Ask for a restart of this agent's loop worker (after changing its handler
        configurations): the governed ``agent.restart_self`` tool, a reviewer's decision."""
        arguments: dict[str, Any] = {"reason": reason, "force": force}
        return self.call_tool("agent.restart_self", arguments, reason=reason)

    def call_status(self, call_id: str) -> Outcome:
        if self.mcp is not None:
            return outcome_from(self._over_mcp(self.mcp.call_status, call_id))
        return outcome_from(self._json(self.request("GET", f"/api/v1/tool-calls/{call_id}/")))

    def wait(
        self,
        pending: PendingApproval | str,
        *,
        timeout: float = 1800.0,
        first_poll: float = 0.5,
        max_poll: float = 15.0,
    ) -> Outcome:
        """Poll a pending call with backoff until it is decided, runs or expires (or the bound
        passes, when the last known state is returned)."""
        call_id = pending if isinstance(pending, str) else pending.call_id
        deadline = time.monotonic() + timeout
        delay = first_poll
        while True:
            status = self.call_status(call_id)
            if not isinstance(status, PendingApproval) or time.monotonic() >= deadline:
                return status
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(max_poll, delay * 2)

    # --- inbox, context, memory ---------------------------------------------------------------

    def tasks(self, status: str | None = None) -> list[dict[str, Any]]:
        path = "/api/v1/tasks/" + (f"?status={status}" if status else "")
        return list(self._json(self.request("GET", path)))

    def claim(self, task_id: str) -> dict[str, Any]:
        return dict(self._json(self.request("POST", f"/api/v1/tasks/{task_id}/claim/")))

    def progress(self, task_id: str, progress: int, note: str = "") -> dict[str, Any]:
        return dict(
            self._json(
                self.request(
                    "POST",
                    f"/api/v1/tasks/{task_id}/progress/",
                    {"progress": progress, "note": note},
                )
            )
        )

    def complete(self, task_id: str, result: Any) -> dict[str, Any]:
        return dict(
            self._json(
                self.request("POST", f"/api/v1/tasks/{task_id}/complete/", {"result": result})
            )
        )

    def fail(self, task_id: str, reason: str) -> dict[str, Any]:
        return dict(
            self._json(self.request("POST", f"/api/v1/tasks/{task_id}/fail/", {"reason": reason}))
        )

    def discover(self, query: str, *, limit: int = 10) -> dict[str, Any]:
        """The tools this agent may call and its own saved plans that fit ``query`` (a goal)."""
        path = "/api/v1/discover/?" + urlencode({"q": query, "limit": limit})
        return dict(self._json(self.request("GET", path)))

    def plan_event(
        self,
        event: str,
        *,
        plan_id: str,
        task_id: str | None = None,
        goal: str = "",
        step: str | None = None,
        tool_id: str | None = None,
        status: str = "",
        detail: str = "",
        steps: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Report the planner's progress to the control plane's event log: ``plan_saved`` (with
        its steps), ``step_started``, ``step_finished`` (``status``: achieved / not_achieved),
        ``plan_failed``."""
        body: dict[str, Any] = {"event": event, "plan_id": plan_id, "goal": goal[:1000]}
        for key, value in (
            ("task_id", task_id),
            ("step", step),
            ("tool_id", tool_id),
            ("status", status),
            ("detail", detail[:1000]),
            ("steps", steps),
        ):
            if value:
                body[key] = value
        return dict(self._json(self.request("POST", "/api/v1/plans/events/", body), ok=(201,)))

    def heartbeat(self, status: str, uptime_seconds: int) -> dict[str, Any]:
        return dict(
            self._json(
                self.request(
                    "POST",
                    "/api/v1/heartbeat/",
                    {"status": status, "uptime_seconds": uptime_seconds},
                )
            )
        )

    def yield_turn(self, timeout_s: float = 25.0) -> dict[str, Any]:
        """End the turn and sleep until new traffic arrives for this agent (a message, a task,
        an approval decided, a hook's message) or ``timeout_s`` (at most 25) passes:
        ``{"woke": bool, "traffic": [...]}`` (docs/channels.md)."""
        body = {"timeout_s": max(0.0, min(25.0, timeout_s))}  # within the client's 30 s
        return dict(self._json(self.request("POST", "/api/v1/loop/yield/", body)))

    # --- the agents ledger (docs/ledgers.md) ----------------------------------------------

    def turn_start(
        self, text: str, *, task_id: str | None = None, thread: str | None = None, title: str = ""
    ) -> dict[str, Any]:
        """Open a turn of this agent's own with its query (in ``thread``, or a new one)."""
        body: dict[str, Any] = {"text": text}
        if task_id:
            body["task_id"] = task_id
        if thread:
            body["thread"] = thread
        if title:
            body["title"] = title[:200]
        return dict(self._json(self.request("POST", "/api/v1/turns/", body), ok=(201,)))

    def turn(self, turn_id: str) -> dict[str, Any]:
        """A turn with its messages (steering messages from the person arrive here)."""
        return dict(self._json(self.request("GET", f"/api/v1/turns/{turn_id}/")))

    def turn_note(self, turn_id: str, content: str) -> dict[str, Any]:
        path = f"/api/v1/turns/{turn_id}/messages/"
        return dict(self._json(self.request("POST", path, {"content": content}), ok=(201,)))

    def turn_complete(self, turn_id: str, answer: str, tool_calls: list[str]) -> dict[str, Any]:
        body = {"answer": answer, "tool_calls": tool_calls}
        return dict(self._json(self.request("POST", f"/api/v1/turns/{turn_id}/complete/", body)))

    def thread_context(self, thread: str) -> dict[str, Any]:
        return dict(self._json(self.request("GET", f"/api/v1/threads/{thread}/context/")))

    def compact(
        self, thread: str, summary: str, summarised_through: str, first_kept: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"summary": summary, "summarised_through": summarised_through}
        if first_kept:
            body["first_kept"] = first_kept
        path = f"/api/v1/threads/{thread}/compact/"
        return dict(self._json(self.request("POST", path, body), ok=(201,)))

    def context(self, task_id: str | None = None) -> dict[str, Any]:
        path = "/api/v1/context/" + (f"?task_id={task_id}" if task_id else "")
        return dict(self._json(self.request("GET", path)))

    def observe(
        self,
        *,
        bucket: str | None = None,
        entity: str,
        pattern_type: str,
        observation: str,
        severity: int = 1,
        repeatable: float = 1.0,
    ) -> dict[str, Any]:
        """Record (or reinforce) an observation. Without a bucket, the bucket checker picks one
        and the broker answers 202 (queued)."""
        payload: dict[str, Any] = {
            "entity": entity,
            "pattern_type": pattern_type,
            "observation": observation,
            "severity": severity,
            "repeatable": repeatable,
        }
        if bucket is not None:
            payload["bucket"] = bucket
        response = self.request("POST", "/api/v1/observations/", payload)
        return dict(self._json(response, ok=(200, 201, 202)))

    def usage(
        self,
        *,
        mode: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        model_calls: int = 1,
        task_id: str | None = None,
        query_ref: str = "",
    ) -> dict[str, Any]:
        """Report a query's token usage; the control plane prices it."""
        payload: dict[str, Any] = {
            "mode": mode,
            "model": model,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "model_calls": model_calls,
            "query_ref": query_ref,
        }
        if task_id:
            payload["task_id"] = task_id
        return dict(self._json(self.request("POST", "/api/v1/usage/", payload), ok=(201,)))

    def upload(
        self, filename: str, content: bytes, *, task_id: str | None = None
    ) -> dict[str, Any]:
        data = {"task_id": task_id} if task_id else None
        return dict(
            self._json(
                self.request(
                    "POST", "/api/v1/deliverables/", files={"file": (filename, content)}, data=data
                )
            )
        )
