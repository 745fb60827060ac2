"""ACL policies (docs/access.md): written as YAML, checked on save with line-numbered errors,
kept with their history; ``manage.py acl_load`` / ``acl_dump`` move them to and from files."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from brainframe.models import AclPolicy, RuleProposal


class AclPolicyForm(forms.ModelForm):
    class Meta:
        model = AclPolicy
        fields = ("document", "active")
        widgets = {
            "document": forms.Textarea(
                attrs={"rows": 24, "cols": 90, "spellcheck": "false", "class": "json-editor"}
            )
        }


@admin.register(AclPolicy)
class AclPolicyAdmin(SimpleHistoryAdmin):
    form = AclPolicyForm
    list_display = ("name", "priority", "effect", "tools", "route_to", "active", "version")
    list_filter = ("active",)
    search_fields = ("name", "document")
    readonly_fields = ("name", "priority", "version", "parsed", "created_at", "updated_at")
    fields = ("document", "active", "name", "priority", "version", "parsed")

    @admin.display(description="effect")
    def effect(self, obj: AclPolicy) -> str:
        return str(obj.spec.get("effect", ""))

    @admin.display(description="tools")
    def tools(self, obj: AclPolicy) -> str:
        return ", ".join((obj.spec.get("permissions") or {}).get("tools") or []) or "—"

    @admin.display(description="route to")
    def route_to(self, obj: AclPolicy) -> str:
        return str(obj.spec.get("route_to") or "—")

    @admin.display(description="as checked")
    def parsed(self, obj: AclPolicy) -> Any:
        return format_html("<pre>{}</pre>", json.dumps(obj.spec, indent=2)) if obj.spec else "—"


@admin.register(RuleProposal)
class RuleProposalAdmin(admin.ModelAdmin):
    """Rules the nightly job proposed from recurring rejections and refusals; staff try, accept
    or dismiss them on the board (Proposed rules)."""

    list_display = ("tool_id", "argument", "value", "action", "count", "status", "vpol")
    list_filter = ("status", "action")
    search_fields = ("tool_id", "argument")
    readonly_fields = (
        "tool_id", "argument", "value", "action", "rule", "evidence", "count", "status", "vpol",
        "decided_by", "decided_at", "created_at",
    )  # fmt: skip

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False
