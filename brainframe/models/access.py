"""Access control (seed 003 ACL): the policies that decide what a person's message may set in
motion. docs/access.md is the reference."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from brainframe.safety.policy.acl import AclDocumentError, acl_parse

from .agents import Agent


class AclPolicy(models.Model):
    """One ACL policy: its YAML ``document`` is what staff write; ``spec`` is that document
    parsed and checked (written on every save, never by hand). ``version`` increases on every
    change of the document, so a recorded decision names the version it was made under."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.SlugField(max_length=80, unique=True, editable=False)
    priority = models.PositiveIntegerField(default=0, editable=False)
    document = models.TextField(
        help_text="YAML: name, priority, when, effect, permissions (tools, scopes), route_to. "
        "See docs/access.md."
    )
    spec = models.JSONField(default=dict, editable=False)
    active = models.BooleanField(default=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(table_name="acl_policies_history")

    class Meta:
        db_table = "acl_policies"
        verbose_name = "ACL policy"
        verbose_name_plural = "ACL policies"
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        spec = acl_parse(self.document)
        if self.spec and spec != self.spec:
            self.version += 1
        self.spec, self.name, self.priority = spec, spec["name"], spec["priority"]
        super().save(*args, **kwargs)

    def clean(self) -> None:
        try:
            spec = acl_parse(self.document)
        except AclDocumentError as exc:
            raise ValidationError({"document": exc.lines()}) from exc
        clash = AclPolicy.objects.filter(name=spec["name"]).exclude(pk=self.pk)
        if clash.exists():
            raise ValidationError({"document": f"line 1: name: {spec['name']} is taken"})
        route = spec.get("route_to")
        if route is not None and not Agent.objects.filter(pk=route).exists():
            raise ValidationError({"document": f"route_to: no agent {route!r}"})
