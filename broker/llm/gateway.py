"""The model gateway as an ASGI app: OpenAI-compatible ``/llm/v1/chat/completions`` (plain and
``stream: true``), ``/llm/v1/embeddings`` and ``/llm/v1/models``, for agents holding a virtual
key (``manage.py llm_key``). Each request is admitted (key, suspension, model or role, budget,
then the per-minute limits in Redis), forwarded to the upstream that serves the model with the
upstream's own key, and recorded by the gateway itself with its tokens, cost and latency.
Refusals are in OpenAI's error format so the official client raises the matching exception;
upstream errors pass through with their status.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from brainframe.services.llm.admission import (
    Admitted,
    LLMRefused,
    allowed_models,
    llm_admit,
    upstream_api_key,
)
from brainframe.services.llm.cache import CacheLookup, cache_lookup, cache_store, cacheable
from brainframe.services.llm.outbound import outbound
from brainframe.services.llm.records import cost_of, llm_record

from . import limits

PREFIX = "/llm/v1"
log = logging.getLogger("broker.llm")
_threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm")
_client: httpx.AsyncClient | None = None


def serves(path: str) -> bool:
    return path == PREFIX or path.startswith(f"{PREFIX}/")


def _http() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.RABS_LLM_UPSTREAM_TIMEOUT_SECONDS, connect=10.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        )
    return _client


async def _run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    def call() -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return await asyncio.get_running_loop().run_in_executor(_threads, call)


def _error(refused: LLMRefused) -> JSONResponse:
    headers = {"Retry-After": str(refused.retry_after)} if refused.retry_after else None
    return JSONResponse(
        {
            "error": {
                "message": refused.message,
                "type": refused.kind,
                "param": None,
                "code": refused.code,
            }
        },
        status_code=refused.status,
        headers=headers,
    )


def _key(request: Request) -> str:
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise LLMRefused(
            401, "invalid_request_error", "invalid_api_key", "a key is required (Bearer)"
        )
    return key.strip()


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > settings.RABS_HTTP_MAX_BODY_BYTES:
        raise LLMRefused(413, "invalid_request_error", "request_too_large", "body too large")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise LLMRefused(400, "invalid_request_error", "invalid_json", "body is not JSON") from None
    if not isinstance(body, dict):
        raise LLMRefused(400, "invalid_request_error", "invalid_request", "expected an object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise LLMRefused(400, "invalid_request_error", "invalid_request", "model is required")
    return body


@dataclass(frozen=True)
class _Ready:
    """An admitted request, ready to leave: its admission, counters, headers and body."""

    admitted: Admitted
    slot: limits.Slot
    headers: dict[str, str]
    outgoing: dict[str, Any]
    redactions: int
    cache: CacheLookup | None = None  # the agent's cache asked (a hit has its response)


def _prepare(key: str, body: dict[str, Any], endpoint: str) -> _Ready:
    """Everything before the upstream, in one thread hop: the key, model access and budget
    (PostgreSQL), the per-minute limits (Redis), the upstream's key, the PII filter."""
    try:
        admitted = llm_admit(key=key, model=body["model"])
    except LLMRefused as refused:
        if refused.agent_id is not None:  # the key said who asked: on the record
            llm_record(
                admitted=None,
                agent_id=refused.agent_id,
                endpoint=endpoint,
                status=refused.status,
                error_code=refused.code,
            )
        raise
    try:
        slot = limits.admit(
            admitted.agent_id, admitted.budget, body, admitted.teams, upstream=admitted.upstream
        )
    except LLMRefused as refused:
        llm_record(
            admitted=admitted,
            agent_id=None,
            endpoint=endpoint,
            status=refused.status,
            error_code=refused.code,
        )
        raise
    try:
        headers = _forward_headers(admitted)
        filtered, redactions = outbound(admitted, body)
        outgoing = {**filtered, "model": admitted.model}
        lookup = None
        if endpoint == "chat/completions" and cacheable(admitted.budget, body):
            lookup = cache_lookup(admitted, outgoing)
    except BaseException:
        slot.settle(0)
        raise
    return _Ready(admitted, slot, headers, outgoing, redactions, lookup)


def _forward_headers(admitted: Admitted) -> dict[str, str]:
    assert admitted.upstream is not None
    key = upstream_api_key(admitted.upstream)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _usage(body: Any) -> tuple[int, int]:
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


async def _finish(
    admitted: Admitted,
    slot: limits.Slot,
    *,
    endpoint: str,
    started: float,
    status: int,
    stream: bool,
    tokens: tuple[int, int],
    error_code: str = "",
    request_body: Any = None,
    response_body: Any = None,
    redactions: int = 0,
    tool_calls: list[dict[str, Any]] | None = None,
    later: bool = False,
    cache_hit: bool = False,
    keep: CacheLookup | None = None,
) -> BackgroundTask | None:
    """Settle the request's counters (tokens, parallel slot, spend: before its answer goes, so
    the agent's next request sees them) and record it — at once, or with ``later`` after the
    answer has been sent (a plain answer need not wait for the INSERT)."""

    def settle_and_record() -> None:
        try:
            if not later:
                llm_record(**record)
        finally:  # the parallel slot is given back whatever happened to the record
            slot.settle(sum(tokens), cost_of(admitted.upstream, *tokens))

    def record_later() -> None:
        # The agent's cache keeps the answer for the same question before the record is
        # written, so a request seen as recorded is a request whose answer is cached.
        if keep is not None:
            try:
                cache_store(admitted, keep, response_body)
            except Exception:
                log.exception("a model answer could not be kept in the agent's cache")
        try:
            llm_record(**record)
        except Exception:
            log.exception("a model request was answered but could not be recorded")

    record = dict(
        admitted=admitted,
        agent_id=None,
        endpoint=endpoint,
        status=status,
        stream=stream,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        latency_ms=int((time.perf_counter() - started) * 1000),
        error_code=error_code,
        request_body=request_body,
        response_body=response_body,
        redactions=redactions,
        tool_calls=tool_calls,
        cache_hit=cache_hit,
    )
    await _run(settle_and_record)
    return BackgroundTask(_run, record_later) if later else None


def _proposed(payload: Any) -> list[dict[str, Any]]:
    """The tool calls in a chat completion's answer."""
    calls: list[dict[str, Any]] = []
    for choice in (payload.get("choices") if isinstance(payload, dict) else None) or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            calls += [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return calls


async def _plain(request: Request, endpoint: str) -> Response:
    started = time.perf_counter()
    try:
        body = await _body(request)
        ready: _Ready = await _run(_prepare, _key(request), body, endpoint)
    except LLMRefused as refused:
        return _error(refused)
    admitted, slot, outgoing, redactions = (
        ready.admitted,
        ready.slot,
        ready.outgoing,
        ready.redactions,
    )
    assert admitted.upstream is not None
    if ready.cache is not None and ready.cache.response is not None:
        record = await _finish(
            admitted, slot, endpoint=endpoint, started=started, status=200, stream=False,
            tokens=(0, 0), request_body=outgoing, response_body=ready.cache.response,
            cache_hit=True, later=True,
        )  # fmt: skip
        return JSONResponse(ready.cache.response, background=record)
    try:
        answer = await _http().post(
            f"{admitted.upstream.base_url}/{endpoint}", json=outgoing, headers=ready.headers
        )
    except httpx.HTTPError as exc:
        await _finish(
            admitted, slot, endpoint=endpoint, started=started, status=502, stream=False,
            tokens=(0, 0), error_code="upstream_unreachable",
        )  # fmt: skip
        detail = f"{type(exc).__name__}: {exc}"
        return _error(LLMRefused(502, "api_error", "upstream_unreachable", detail))
    try:
        payload = answer.json()
    except ValueError:
        payload = {"error": {"message": answer.text[:500], "type": "api_error"}}
    record = await _finish(
        admitted,
        slot,
        endpoint=endpoint,
        started=started,
        status=answer.status_code,
        stream=False,
        tokens=_usage(payload),
        error_code="" if answer.status_code < 400 else "upstream_error",
        request_body=outgoing,
        response_body=payload,
        redactions=redactions,
        tool_calls=_proposed(payload) if answer.status_code < 400 else [],
        later=True,
        keep=ready.cache if answer.status_code == 200 else None,
    )
    return JSONResponse(payload, status_code=answer.status_code, background=record)


async def chat_completions(request: Request) -> Response:
    try:
        body = await _body(request)
    except LLMRefused as refused:
        return _error(refused)
    if not body.get("stream"):
        return await _plain(request, "chat/completions")  # the body is read once (cached)
    return await _stream(request, body)


async def _stream(request: Request, body: dict[str, Any]) -> Response:
    started = time.perf_counter()
    try:
        ready: _Ready = await _run(_prepare, _key(request), body, "chat/completions")
    except LLMRefused as refused:
        return _error(refused)
    admitted, slot, headers, redactions = (
        ready.admitted,
        ready.slot,
        ready.headers,
        ready.redactions,
    )
    assert admitted.upstream is not None
    # Usage comes in a last chunk when asked for; the client sees it only if it asked.
    wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    outgoing = {
        **ready.outgoing,
        "stream_options": {**(body.get("stream_options") or {}), "include_usage": True},
    }
    client = _http()
    upstream_request = client.build_request(
        "POST", f"{admitted.upstream.base_url}/chat/completions", json=outgoing, headers=headers
    )
    try:
        answer = await client.send(upstream_request, stream=True)
    except httpx.HTTPError as exc:
        await _finish(
            admitted, slot, endpoint="chat/completions", started=started, status=502,
            stream=True, tokens=(0, 0), error_code="upstream_unreachable",
        )  # fmt: skip
        return _error(
            LLMRefused(502, "api_error", "upstream_unreachable", f"{type(exc).__name__}: {exc}")
        )
    if answer.status_code >= 400:
        raw = await answer.aread()
        await answer.aclose()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = {"error": {"message": raw.decode("utf-8", "replace")[:500]}}
        await _finish(
            admitted, slot, endpoint="chat/completions", started=started,
            status=answer.status_code, stream=True, tokens=(0, 0), error_code="upstream_error",
        )  # fmt: skip
        return JSONResponse(payload, status_code=answer.status_code)

    async def relay() -> AsyncIterator[bytes]:
        tokens = (0, 0)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        status, code = 200, ""
        try:
            async for line in answer.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    try:
                        chunk = json.loads(line[6:])
                    except ValueError:
                        chunk = None
                    if isinstance(chunk, dict):
                        if chunk.get("usage"):
                            tokens = _usage(chunk)
                            if not chunk.get("choices") and not wants_usage:
                                continue  # the usage-only chunk the client did not ask for
                            if not wants_usage:
                                chunk = {**chunk, "usage": None}
                                line = "data: " + json.dumps(chunk)
                        for choice in chunk.get("choices") or []:
                            delta = choice.get("delta") or {}
                            if isinstance(delta.get("content"), str):
                                text.append(delta["content"])
                            for part in delta.get("tool_calls") or []:
                                _gather(calls, part)
                yield (line + "\n").encode()
        except httpx.HTTPError:
            status, code = 502, "upstream_interrupted"
        finally:
            await answer.aclose()
            await _finish(
                admitted,
                slot,
                endpoint="chat/completions",
                started=started,
                status=status,
                stream=True,
                tokens=tokens,
                error_code=code,
                request_body=outgoing,
                response_body={"content": "".join(text)},
                redactions=redactions,
                tool_calls=[calls[i] for i in sorted(calls)],
            )

    return StreamingResponse(
        relay(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _gather(calls: dict[int, dict[str, Any]], part: Any) -> None:
    """A streamed tool call's pieces, joined: its name once, its arguments in fragments."""
    if not isinstance(part, dict):
        return
    call = calls.setdefault(
        int(part.get("index") or 0), {"function": {"name": "", "arguments": ""}}
    )
    function = part.get("function") or {}
    if function.get("name"):
        call["function"]["name"] = function["name"]
    if isinstance(function.get("arguments"), str):
        call["function"]["arguments"] += function["arguments"]


async def embeddings(request: Request) -> Response:
    return await _plain(request, "embeddings")


async def list_models(request: Request) -> Response:
    def listing() -> dict[str, Any]:
        admitted = llm_admit(key=_key(request), model=None)
        served = allowed_models(admitted.budget, admitted.upstreams, admitted.teams)
        names = sorted(served) + sorted(
            role for role, model in admitted.budget.aliases.items() if model in served
        )
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "rabs-gateway"}
                for name in names
            ],
        }

    try:
        return JSONResponse(await _run(listing))
    except LLMRefused as refused:
        return _error(refused)


class LLMGateway:
    def __init__(self) -> None:
        self.app = Starlette(
            routes=[
                Route(f"{PREFIX}/chat/completions", chat_completions, methods=["POST"]),
                Route(f"{PREFIX}/embeddings", embeddings, methods=["POST"]),
                Route(f"{PREFIX}/models", list_models, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode("latin1").lower(): v.decode("latin1") for k, v in scope["headers"]}
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            response = _error(LLMRefused(400, "invalid_request_error", "bad_host", "bad host"))
            await response(scope, receive, send)
            return
        if settings.RABS_PROCESS_HEADER:  # the multi-process checks: which process answered
            process = str(os.getpid()).encode()
            plain_send = send

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    headers = [*message.get("headers", []), (b"x-rabs-process", process)]
                    message = {**message, "headers": headers}
                await plain_send(message)

        await self.app(scope, receive, send)
