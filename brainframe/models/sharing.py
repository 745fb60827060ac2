"""Mandatory access rules for sharing (seed 002 MAC): rules no owner can override. Append-only:
a rule can be added, never changed or removed (a ratchet). docs/access.md, "Sharing"."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from .append_only import AppendOnlyModel


class MacRule(AppendOnlyModel):
    """``when`` holds over the read's facts (``requester.*``, ``item.*``) → the read is refused,
    whatever the owner's boundary says."""

    APPEND_ONLY_MUTABLE: ClassVar[tuple[str, ...]] = ()

    code = models.CharField(primary_key=True, max_length=40)
    when = models.JSONField(help_text="A condition over requester.* and item.*")
    reason = models.CharField(max_length=300)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mac_rules"
        ordering = ["code"]
        verbose_name = "sharing rule (MAC)"
        verbose_name_plural = "sharing rules (MAC)"

    def __str__(self) -> str:
        return self.code
