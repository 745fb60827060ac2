"""Refusals the broker answers with: an HTTP status, a machine-readable code, the field at fault."""

from __future__ import annotations

from typing import Any


class BrokerRefusal(Exception):
    """A request the broker will not process, answered as ``{code, detail, field?, errors?}``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        field: str | None = None,
        errors: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.field = field
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "detail": self.detail}
        if self.field:
            body["field"] = self.field
        if self.errors:
            body["errors"] = self.errors
        return body
