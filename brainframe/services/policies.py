"""Validation policy (V-Pol) changes."""

from __future__ import annotations

from django.db import transaction

from brainframe.models import ValidationPolicy

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
