"""What the admin pages share: JSON editing, read-only audit tables, recorded level changes."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest
from django.utils.html import format_html

from brainframe.models import (
    MonitoringLevelChange,
)
from brainframe.services.access.sharing import share_policy_errors
from brainframe.services.trust.alignment import monitoring_level_set


def pretty_json(value: Any) -> str:
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2))


class IndentedJSONField(forms.JSONField):
    """JSON shown indented for editing (schemas, rules, predicates), not on one long line."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, InvalidJSONInput):  # what was typed, shown again with its error
            return value
        return json.dumps(value, ensure_ascii=False, indent=2, cls=self.encoder)


class JSONEditingMixin(admin.ModelAdmin):
    """Editable admins: JSON fields in a roomy monospace box, indented."""

    formfield_overrides = {
        models.JSONField: {
            "form_class": IndentedJSONField,
            "widget": forms.Textarea(
                attrs={"rows": 14, "cols": 90, "spellcheck": "false", "class": "json-editor"}
            ),
        }
    }


class ReadOnlyAdmin(admin.ModelAdmin):
    """For append-only audit tables: view and search, never add, change or delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    """An inline that shows system-written rows: no adding, changing or deleting."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class LevelChangeForm(forms.ModelForm):
    """A staff change of the monitoring level needs a reason: it goes into the level history
    (``monitoring_level_changes``, rule ``manual``) like every graduation and demotion."""

    level_change_reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Why the monitoring level changes: required when you change it, kept in "
        "the level history.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if (
            not self.instance._state.adding
            and "monitoring_level" in self.changed_data
            and not cleaned.get("level_change_reason", "").strip()
        ):
            self.add_error("level_change_reason", "Say why the monitoring level changes.")
        return cleaned


class LevelChangeAdmin(admin.ModelAdmin):
    """Saves the object; a changed monitoring level goes through ``monitoring_level_set``."""

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            return fieldsets
        # A new tool or agent starts at its level: there is no change to give a reason for.
        return [
            (
                name,
                {**options, "fields": [f for f in options["fields"] if f != "level_change_reason"]},
            )
            for name, options in fieldsets
        ]

    def save_model(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> None:
        if not (change and "monitoring_level" in form.changed_data):
            super().save_model(request, obj, form, change)
            return
        wanted = obj.monitoring_level
        obj.monitoring_level = form.initial["monitoring_level"]
        super().save_model(request, obj, form, change)
        monitoring_level_set(
            obj,
            to_level=wanted,
            by=request.user,
            reason=form.cleaned_data["level_change_reason"].strip(),
        )


class LevelChangeInline(ReadOnlyInline):
    model = MonitoringLevelChange
    fk_name = "tool"
    fields = ("created_at", "from_level", "to_level", "rule", "reason", "changed_by")
    ordering = ("-created_at",)


class AgentLevelChangeInline(LevelChangeInline):
    fk_name = "agent"


class SharePolicyFormMixin(forms.ModelForm):
    """A form for something with a sharing policy (docs/access.md, "Sharing"): checked on save."""

    def clean_share_policy(self) -> Any:
        policy = self.cleaned_data.get("share_policy") or {}
        problems = share_policy_errors(policy)
        if problems:
            raise forms.ValidationError(problems)
        return policy
