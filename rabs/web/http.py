"""HTTP under daphne through Django's synchronous request path: one thread hop per request.

Django's own ASGI handler runs the middleware chain in async mode. Every ``MiddlewareMixin``
middleware then hops to a thread and back for its ``process_request``/``process_response``, and
the synchronous views hop once more: a dozen thread switches and futures per request, which cost
more CPU than the broker's whole decision. Here the body is read on the event loop, then the
request signals, the synchronous middleware chain and the view all run on one worker thread of a
bounded pool (each worker with its own pooled database connection), and the loop sends the
answer. Requests beyond the pool's threads wait their turn instead of piling onto the database
pool. The board's websockets stay async (Channels).
"""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import connections
from django.http import FileResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import set_script_prefix

from broker.api.fast import tool_call_fast

from .middleware import disallowed_host


class AgentCallLane:
    """``POST /api/v1/tool-calls/``, the hot path of every agent, without the middleware that
    only serves people (sessions, authentication by cookie, messages, HTMX, history): a signed
    agent request uses none of them. What still applies does here too: the Host check (a JSON
    400, as ``ApiHostMiddleware`` answers), ``SecurityMiddleware`` (its redirect and headers),
    the frame-options header and ``X-RABS-Process`` when it is on. A request the tool-call fast
    path hands back takes the whole chain.
    """

    PATH = "/api/v1/tool-calls/"

    def __init__(self, full: Any) -> None:
        self.full = full
        self.security = SecurityMiddleware(full)
        self.frames = XFrameOptionsMiddleware(full)
        self.process = str(os.getpid()) if settings.RABS_PROCESS_HEADER else None

    def takes(self, request: Any) -> bool:
        return bool(request.method == "POST" and request.path == self.PATH)

    def __call__(self, request: Any) -> HttpResponseBase:
        refused = disallowed_host(request)
        if refused is not None:
            return refused
        redirect = self.security.process_request(request)
        if redirect is not None:
            return redirect
        handed_back = False

        def fallback(request: Any) -> HttpResponseBase:
            nonlocal handed_back
            handed_back = True
            return self.full(request)

        response = tool_call_fast(request, fallback=fallback)
        if not handed_back:  # the whole chain has already added these
            self.security.process_response(request, response)
            self.frames.process_response(request, response)
            if self.process is not None:
                response["X-RABS-Process"] = self.process
        return response


class SyncASGIHandler(ASGIHandler):
    def __init__(self, *, threads: int) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self.agent_calls = AgentCallLane(self.get_response)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django serves HTTP here, not {scope['type']}")
        limit = settings.RABS_HTTP_MAX_BODY_BYTES
        if _declared_length(scope) > limit:
            await _too_large(send, limit)  # before reading a byte of it
            return
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        except _BodyTooLarge:
            await _too_large(send, limit)
            return
        loop = asyncio.get_running_loop()
        try:
            response = await loop.run_in_executor(self.executor, self._respond, scope, body)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client went away mid-answer
            finally:
                if response.streaming:  # closed only once its content has been sent
                    await loop.run_in_executor(self.executor, response.close)
        finally:
            body.close()

    async def send_response(self, response: HttpResponseBase, send: Any) -> None:
        if not response.streaming or response.is_async:  # type: ignore[attr-defined]
            await super().send_response(response, send)
            return
        # A file or generator: read a chunk at a time on a worker thread (Django's handler would
        # read all of it into memory first), send each as it comes.
        headers = [
            (name.encode("ascii"), value.encode("latin1")) for name, value in response.items()
        ]
        headers += [
            (b"Set-Cookie", cookie.output(header="").encode("ascii").strip())
            for cookie in response.cookies.values()
        ]
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": headers}
        )
        loop = asyncio.get_running_loop()
        chunks = iter(response.streaming_content)  # type: ignore[attr-defined]
        while (chunk := await loop.run_in_executor(self.executor, next, chunks, None)) is not None:
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body"})

    async def read_body(self, receive: Any) -> Any:
        """Django's, but a body that grows past the limit (chunked, or longer than it said) is
        refused as it arrives rather than spooled to disk whole."""
        limit = settings.RABS_HTTP_MAX_BODY_BYTES
        received = 0

        async def counting() -> dict[str, Any]:
            nonlocal received
            message: dict[str, Any] = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise _BodyTooLarge
            return message

        return await super().read_body(counting)

    def _respond(self, scope: dict[str, Any], body: Any) -> HttpResponseBase:
        """On a worker thread: Django's whole synchronous handling of one request."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body)
        if request is not None:
            if self.agent_calls.takes(request):
                response = self.agent_calls(request)
            else:
                response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        assert response is not None
        if response.streaming:
            # Its content is read on the loop; this thread's connections go back now.
            for connection in connections.all(initialized_only=True):
                connection.close()
        else:
            response.close()  # request_finished here, where the connections are
        return response


class _BodyTooLarge(Exception):
    pass


def _declared_length(scope: dict[str, Any]) -> int:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0  # Django answers a malformed one
    return 0


async def _too_large(send: Any, limit: int) -> None:
    body = json.dumps(
        {"code": "body_too_large", "detail": f"request bodies are limited to {limit} bytes"}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def http_threads() -> int:
    """Worker threads per process: ``RABS_HTTP_THREADS``, at most the database pool's size."""
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    threads: int = settings.RABS_HTTP_THREADS
    return min(threads, int(pool["max_size"])) if isinstance(pool, dict) else threads


def form_parsing_off() -> None:
    """Turn off Twisted's parsing of POSTed forms for daphne's requests.

    Under daphne every request is a Twisted ``Request``. For each POST with a body and a
    Content-Type, Twisted parses the type with the email package and, for a form, the body
    itself (multipart in memory whole) to fill ``request.args``. daphne never reads ``args``:
    the app gets the raw body and Django parses it, within the body limit. The Content-Type's
    parse alone took 87–105 µs a request (about 2 % of a signed call's web CPU), and a form
    Twisted could not parse was answered with its own bare 400 before the app saw it. Twisted's
    switch for this, ``parsePOSTFormSubmission``, is set off for every request daphne makes.
    """
    # Twisted and daphne loaded only by the process that serves with daphne.
    from daphne.http_protocol import WebRequest

    made = WebRequest.__init__
    if getattr(made, "forms_off", False):
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **{**kwargs, "parsePOSTFormSubmission": False})

    __init__.forms_off = True  # type: ignore[attr-defined]
    WebRequest.__init__ = __init__
