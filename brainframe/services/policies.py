"""Validation policy (V-Pol) changes."""

from __future__ import annotations

from django.db import transaction

from brainframe.models import ValidationPolicy


def validation_policy_save(*, policy: ValidationPolicy, is_new: bool) -> ValidationPolicy:
    """Save a policy; a change to an existing one bumps ``version``.

    Approvals record the version they were created under, so a rule change after the fact is
    visible when the approval is decided. The row lock makes concurrent edits count twice.
    """
    with transaction.atomic():
        if not is_new:
            current = (
                ValidationPolicy.objects.select_for_update()
                .values_list("version", flat=True)
                .get(pk=policy.pk)
            )
            policy.version = current + 1
        policy.save()
    return policy
