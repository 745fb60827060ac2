"""What the broker answers a tool call with, as typed outcomes (the SDK's ``call_tool``, ``wait``
and ``call_status`` return them), and the error it raises when the broker refuses the request
itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


class BrokerError(Exception):
    """The broker refused the request itself (not a tool decision): ``code`` says why."""

    def __init__(self, status: int, code: str, detail: str, body: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.body = status, code, detail, body


@dataclass(frozen=True)
class Tags:
    """What every call outcome carries; each kind's ``STATUS`` is the broker's name for it."""

    call_id: str
    r_tag: str | None
    o_tag: str | None
    vpol: str | None


@dataclass(frozen=True)
class Executed(Tags):
    STATUS: ClassVar[str] = "executed"
    result: Any = None
    outcome: str = "succeeded"  # succeeded / failed / timed_out
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "succeeded"


@dataclass(frozen=True)
class PendingApproval(Tags):
    STATUS: ClassVar[str] = "pending_approval"
    approval_id: str = ""
    expires_at: str = ""
    #: "pending" or "escalated" while a reviewer is to decide; "approved" once decided and not
    #: yet run, with ``detail`` "approved — waiting for a worker" when no worker took it up.
    approval_status: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Denied(Tags):
    STATUS: ClassVar[str] = "denied"
    code: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Rejected(Tags):
    STATUS: ClassVar[str] = "rejected"
    reason: str = ""


@dataclass(frozen=True)
class Expired(Tags):
    STATUS: ClassVar[str] = "expired"


@dataclass(frozen=True)
class InvalidArguments(Tags):
    STATUS: ClassVar[str] = "invalid"
    code: str = ""
    detail: str = ""
    errors: list[dict[str, str]] = field(default_factory=list)


Outcome = Executed | PendingApproval | Denied | Rejected | Expired | InvalidArguments


def outcome_from(body: dict[str, Any]) -> Outcome:
    tags: dict[str, Any] = {key: body.get(key) for key in ("call_id", "r_tag", "o_tag", "vpol")}
    status = body.get("status")
    if status == "executed":
        return Executed(
            **tags,
            result=body.get("result"),
            outcome=body.get("outcome", ""),
            error=body.get("error", ""),
        )
    if status == "pending_approval":
        return PendingApproval(
            **tags,
            approval_id=body.get("approval_id", ""),
            expires_at=body.get("expires_at", ""),
            approval_status=body.get("approval_status", ""),
            detail=body.get("detail", ""),
        )
    if status == "denied":
        return Denied(**tags, code=body.get("code", ""), detail=body.get("detail", ""))
    if status == "rejected":
        return Rejected(**tags, reason=body.get("rejection_reason", ""))
    if status == "expired":
        return Expired(**tags)
    return InvalidArguments(
        **tags,
        code=body.get("code", ""),
        detail=body.get("detail", ""),
        errors=list(body.get("errors", [])),
    )
