"""Project middleware.

``ProcessHeaderMiddleware``: ``X-RABS-Process: <pid>`` on every response, when
``RABS_PROCESS_HEADER`` is on. For the multi-process checks (``make run-multi`` and its test):
which web process answered. Off by default: a deployment has no reason to tell clients its
process ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost, MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse, JsonResponse


class ProcessHeaderMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.RABS_PROCESS_HEADER:
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.pid = str(os.getpid())

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response["X-RABS-Process"] = self.pid
        return response


class ApiHostMiddleware:
    """Under /api/, a Host header this deployment does not serve is refused with a JSON 400
    (``disallowed_host``), like every other API error, instead of Django's HTML page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            refused = disallowed_host(request)
            if refused is not None:
                return refused
        return self.get_response(request)


def disallowed_host(request: HttpRequest) -> JsonResponse | None:
    """The API's answer to a request for a Host this server does not serve, else None."""
    try:
        request.get_host()
    except DisallowedHost:
        return JsonResponse(
            {
                "code": "disallowed_host",
                "detail": "this server does not answer for that Host",
                "field": "Host",
            },
            status=400,
        )
    return None
