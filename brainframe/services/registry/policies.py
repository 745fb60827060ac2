"""Validation policy (V-Pol) changes."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import transaction
from simple_history.models import HistoricalRecords

from brainframe.events import PolicyChanged, emit
from brainframe.models import Tool, ValidationPolicy

#: What a policy decides with. A change to any of these is a new version; a renamed or
#: re-described policy decides as before and keeps its version.
GOVERNING_FIELDS = (
    "rules",
    "tool_patterns",
    "context_bucket",
    "enforcement_mode",
    "priority",
    "active",
)


def validation_policy_save(*, policy: ValidationPolicy, is_new: bool) -> ValidationPolicy:
    """Save a policy; a change to what it decides with bumps ``version``.

    Approvals record the version they were created under, and one whose policy changed since
    cannot be approved (``policy_changed``): so a save that changes nothing it decides with —
    the admin's Save pressed on an unchanged page, a new description — keeps the version and
    leaves those approvals decidable. The row lock makes concurrent edits count twice.
    """
    with transaction.atomic():
        if not is_new:
            current = ValidationPolicy.objects.select_for_update().get(pk=policy.pk)
            changed = any(
                getattr(policy, name) != getattr(current, name) for name in GOVERNING_FIELDS
            )
            policy.version = current.version + 1 if changed else current.version
        policy.save()
    return policy


def policy_changed_emit(*, policy: Any, action: str) -> None:
    """Keep a change of a governing rule (a V-Pol, a prime directive, a constitution rule) in the
    event log, in the transaction that saved it: who did it when a person did (the admin's
    request), the council proposal when the council did (``changes_by_proposal``)."""
    request = getattr(HistoricalRecords.context, "request", None)
    user = getattr(request, "user", None)
    proposal = _by_proposal.get()
    emit(
        PolicyChanged(
            kind=policy._meta.model_name,
            policy_id=str(policy.pk),
            action=action,
            by=user.get_username() if user is not None and user.is_authenticated else None,
            version=getattr(policy, "version", None),
            proposal_id=str(proposal) if proposal else None,
        )
    )


_by_proposal: ContextVar[Any] = ContextVar("policy_change_by_proposal", default=None)


@contextmanager
def changes_by_proposal(proposal_id: Any) -> Iterator[None]:
    """Policy changes made inside are the council's decision ``proposal_id``."""
    token = _by_proposal.set(proposal_id)
    try:
        yield
    finally:
        _by_proposal.reset(token)


def governing_policy(tool: Tool, policies: list[ValidationPolicy]) -> ValidationPolicy | None:
    """The V-Pol that governs a new chain starting with ``tool``: the highest-priority active
    policy whose tool patterns match it, else one scoped to the tool's context bucket."""
    by_pattern = [
        p
        for p in policies
        if any(fnmatch.fnmatchcase(tool.tool_id, pat) for pat in p.tool_patterns)
    ]
    candidates = by_pattern or [
        p for p in policies if not p.tool_patterns and p.context_bucket == tool.context_bucket
    ]
    return max(candidates, key=lambda p: (p.priority, p.name), default=None)
