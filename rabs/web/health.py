"""``/healthz`` and ``/healthz/web``: how the parts are, for people, monitoring, load balancers and
the scripts that wait for a server to come up. Open to anyone; each part is only ``ok`` or
``down`` (details go to the log).

``/healthz`` reports every part: this web process (``web``, ok when it answers at all), the
database (``SELECT 1``), Redis (``PING``), a Celery worker and beat (a heartbeat younger than
``broker.liveness.FRESH_SECONDS``). It answers ``503`` with ``code: unavailable`` when a part
that approvals need is down: the database and Redis (the broker fails closed without either), a
worker (nothing else runs an approved call) and beat (it expires overdue approvals and enqueues
again an approved call whose job was lost).

``/healthz/web`` asks only what this web process needs to serve (the database and Redis): the
probe for load balancers and container health checks, which should not take a web process out
of rotation because the workers are away. About a millisecond through the request path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.cache import caches
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from broker.liveness import alive

log = logging.getLogger(__name__)


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis() -> None:
    caches["default"].redis().ping()  # type: ignore[attr-defined]


WEB_CHECKS: dict[str, Callable[[], None]] = {"database": _database, "redis": _redis}


def _checks(names: dict[str, Callable[[], None]]) -> dict[str, str]:
    checks: dict[str, str] = {"web": "ok"}
    for name, check in names.items():
        try:
            check()
            checks[name] = "ok"
        except Exception:  # any failure of a dependency is "down"; the log says which
            log.warning("health check: %s is down", name, exc_info=True)
            checks[name] = "down"
    return checks


def _background(checks: dict[str, str]) -> None:
    """Adds ``worker`` and ``beat`` from their heartbeats (down when Redis is)."""
    try:
        found = alive() if checks.get("redis") == "ok" else {}
    except Exception:
        log.warning("health check: heartbeats unreadable", exc_info=True)
        found = {}
    for part in ("worker", "beat"):
        checks[part] = "ok" if found.get(part) else "down"


def _answer(request: HttpRequest, *, background: bool) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):
        answer = JsonResponse(
            {"code": "method_not_allowed", "detail": "GET or HEAD", "field": "method"}, status=405
        )
        answer["Allow"] = "GET, HEAD"
        return answer
    checks = _checks(WEB_CHECKS)
    if background:
        _background(checks)
    down = [name for name, state in checks.items() if state != "ok"]
    if down:
        body = {
            "code": "unavailable",
            "detail": f"down: {', '.join(down)}",
            "status": "down",
            "checks": checks,
        }
        answer = JsonResponse(body, status=503)
    else:
        answer = JsonResponse({"status": "ok", "checks": checks})
    answer["Cache-Control"] = "no-store"
    return answer


@csrf_exempt
def healthz(request: HttpRequest) -> JsonResponse:
    """Every part; 503 when one that approvals need is down."""
    return _answer(request, background=True)


@csrf_exempt
def healthz_web(request: HttpRequest) -> JsonResponse:
    """This web process and what it needs to serve; for load balancers."""
    return _answer(request, background=False)
