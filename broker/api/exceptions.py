"""Every error the API returns has the same shape: ``{code, detail, field?, errors?}``."""

from __future__ import annotations

from typing import Any

from django.db.utils import OperationalError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from brainframe.services.ledger.ledgers import LedgerRefusal
from brainframe.services.work.deliverables import DeliverableRejected
from brainframe.services.work.tasks import TaskTransitionError

from ..errors import BrokerRefusal
from ..services.approvals import ApprovalError

_CODES = {
    exceptions.ParseError: "malformed_json",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.Throttled: "rate_limited",
    exceptions.PermissionDenied: "forbidden",
}


def _flatten(detail: Any, path: str = "") -> list[dict[str, str]]:
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            sub = f"{path}/{key}" if key != "non_field_errors" else path
            out.extend(_flatten(value, sub))
        return out
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [{"path": path or "/", "message": str(item)} for item in detail]
        out = []
        for index, item in enumerate(detail):
            out.extend(_flatten(item, f"{path}/{index}"))
        return out
    return [{"path": path or "/", "message": str(detail)}]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, OperationalError):
        # No database connection to be had (server down, pool exhausted under overload):
        # nothing was done; say so, and when to try again, instead of a bare 500.
        return Response(
            {"code": "database_unavailable", "detail": "the database is unavailable; retry"},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "1"},
        )
    if isinstance(exc, BrokerRefusal):
        return Response(exc.body(), status=exc.status)
    if isinstance(exc, LedgerRefusal):
        refusal = BrokerRefusal(exc.status, exc.code, exc.detail, field=exc.field)
        return Response(refusal.body(), status=refusal.status)
    if isinstance(exc, ApprovalError):
        body: dict[str, Any] = {"code": exc.code, "detail": exc.detail}
        if exc.errors:
            body["errors"] = exc.errors
        return Response(body, status=exc.status)
    if isinstance(exc, DeliverableRejected):
        return Response(
            {"code": exc.code, "detail": exc.detail, "field": "file"}, status=exc.status
        )
    if isinstance(exc, TaskTransitionError):
        return Response(
            {"code": "task_state_conflict", "detail": str(exc), "status": exc.task.status},
            status=status.HTTP_409_CONFLICT,
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = _flatten(exc.detail)
        response.data = {
            "code": "invalid_request",
            "detail": "the request does not have the expected shape",
            "field": errors[0]["path"].lstrip("/").split("/")[0] if errors else None,
            "errors": errors,
        }
        return response
    if isinstance(exc, exceptions.AuthenticationFailed | exceptions.NotAuthenticated):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "not_authenticated"
        response.data = {"code": code, "detail": str(exc.detail)}
        return response
    code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "error")
    response.data = {"code": code, "detail": str(getattr(exc, "detail", exc))}
    return response
