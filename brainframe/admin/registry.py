"""The tools registry: tools, V-Pols, prime directives, the constitution, context buckets."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from simple_history.admin import SimpleHistoryAdmin

from brainframe.choices import ExecutionMode, default_execution_mode, default_monitoring_ceiling
from brainframe.models import (
    ConstitutionRule,
    ContextBucketDefinition,
    PrimeDirective,
    Tool,
    ValidationPolicy,
)
from brainframe.safety.policy.conditions import vpol_rules_errors
from brainframe.schemas import handler_config_errors, json_schema_errors
from brainframe.services.council.changes import DIRECTIVE_FIELDS, VPOL_FIELDS
from brainframe.services.council.votes import needs_council
from brainframe.services.registry.policies import validation_policy_save
from brainframe.services.registry.tools import (
    mcp_name_clash,
    mcp_names,
    tool_set_enabled,
    tool_set_execution_mode,
)

from .common import (
    JSONEditingMixin,
    LevelChangeAdmin,
    LevelChangeForm,
    LevelChangeInline,
)
from .council import CouncilGatedAdmin


class ToolAdminForm(LevelChangeForm):
    class Meta:
        model = Tool
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        level, ceiling = cleaned.get("monitoring_level"), cleaned.get("monitoring_ceiling")
        if level is not None and ceiling is not None and level > ceiling:
            if "monitoring_level" in self.changed_data:
                self.add_error(
                    "monitoring_level", f"Above this tool's ceiling ({ceiling}): raise it first."
                )
            else:  # the ceiling came down past where the tool is
                self.add_error(
                    "monitoring_ceiling",
                    f"The tool is at level {level}: lower its level too (with a reason), or keep "
                    f"the ceiling at {level} or above.",
                )
        tool_id = cleaned.get("tool_id")
        if tool_id and self.instance._state.adding:
            clash = mcp_name_clash(tool_id)
            if clash is not None:
                self.add_error(
                    "tool_id",
                    f"On the MCP face this would be named as {clash} is: choose another id "
                    "(dots and underscores read the same there).",
                )
        for field, require_object in (("input_schema", True), ("output_schema", False)):
            if field in cleaned:
                for problem in json_schema_errors(cleaned[field], require_object=require_object):
                    self.add_error(field, problem)
        if "handler_type" in cleaned and "handler_config" in cleaned:
            for problem in handler_config_errors(
                cleaned["handler_type"], cleaned["handler_config"]
            ):
                self.add_error("handler_config", problem)
        return cleaned


@admin.register(Tool)
class ToolAdmin(JSONEditingMixin, LevelChangeAdmin, SimpleHistoryAdmin):
    form = ToolAdminForm
    list_display = (
        "tool_id",
        "mcp_name",
        "category",
        "risk_level",
        "execution_mode",
        # validation_mode and data_class are filters, not columns: with the MCP name the list
        # fits 1366 px.
        "monitoring_level",
        "alignment_score_90d",
        "is_enabled",
    )
    list_filter = (
        "category",
        "risk_level",
        "execution_mode",
        "validation_mode",
        "monitoring_level",
        "data_class",
        "handler_type",
        "context_bucket",
    )
    search_fields = ("tool_id", "description")
    readonly_fields = ("mcp_name", "alignment_score_90d", "created_at", "updated_at")
    _mcp_names: dict[str, str] | None = None  # every tool's MCP name, read once per list page
    inlines = [LevelChangeInline]
    actions = ["disable_tools", "enable_tools", "set_mode_auto", "set_mode_review"]
    fieldsets = (
        (None, {"fields": ("tool_id", "mcp_name", "description", "category", "context_bucket")}),
        ("Access", {"fields": ("agent_access", "role_requirements", "modes")}),
        (
            "Risk and oversight",
            {
                "fields": (
                    "risk_level",
                    "execution_mode",
                    "validation_mode",
                    "data_class",
                    "external_channel",
                    "permission_tier",
                    "monitoring_level",
                    "level_change_reason",
                    "monitoring_ceiling",
                    "alignment_score_90d",
                    "approval_timeout_minutes",
                )
            },
        ),
        ("Handler", {"fields": ("handler_type", "handler_config")}),
        ("Schemas", {"fields": ("input_schema", "output_schema")}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )

    @admin.display(boolean=True, description="enabled", ordering="execution_mode")
    def is_enabled(self, obj: Tool) -> bool:
        return obj.enabled

    @admin.display(description="MCP name")
    def mcp_name(self, obj: Tool) -> str:
        """The tool's name on the MCP face (docs/mcp.md, "Tool names"), as agents' frameworks
        hand it to their models."""
        if not obj.pk:
            return "-"
        names = getattr(self, "_mcp_names", None)
        if names is None or obj.pk not in names:  # once per page, not per row
            names = self._mcp_names = mcp_names(Tool.objects.values_list("tool_id", flat=True))
        return names.get(obj.pk, "-")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        self._mcp_names = None
        return super().changelist_view(request, extra_context)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial: dict[str, Any] = dict(super().get_changeform_initial_data(request))
        risk = initial.get("risk_level")
        if risk:
            initial.setdefault("execution_mode", default_execution_mode(risk))
            initial.setdefault("monitoring_ceiling", default_monitoring_ceiling(risk))
        return initial

    @admin.action(description="Disable selected tools")
    def disable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        count = tool_set_enabled(tools=queryset, enabled=False)
        self.message_user(request, f"Disabled {count} tool(s).", messages.SUCCESS)

    @admin.action(description="Enable selected tools (default mode for their risk)")
    def enable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        count = tool_set_enabled(tools=queryset, enabled=True)
        self.message_user(request, f"Enabled {count} tool(s).", messages.SUCCESS)

    @admin.action(description="Set execution mode: auto")
    def set_mode_auto(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        count = tool_set_execution_mode(tools=queryset, mode=ExecutionMode.AUTO)
        self.message_user(request, f"{count} tool(s) now run automatically.", messages.SUCCESS)

    @admin.action(description="Set execution mode: review")
    def set_mode_review(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        count = tool_set_execution_mode(tools=queryset, mode=ExecutionMode.REVIEW)
        self.message_user(request, f"{count} tool(s) now go to review.", messages.SUCCESS)


class ValidationPolicyForm(forms.ModelForm):
    class Meta:
        model = ValidationPolicy
        fields = "__all__"

    def clean_rules(self) -> Any:
        rules = self.cleaned_data["rules"]
        problems = vpol_rules_errors(rules)
        if problems:
            raise forms.ValidationError(problems)
        return rules


@admin.register(ValidationPolicy)
class ValidationPolicyAdmin(CouncilGatedAdmin, JSONEditingMixin, SimpleHistoryAdmin):
    """A policy marked ``council_required`` changes what it decides with only by a council
    vote; its name and description are saved at once."""

    form = ValidationPolicyForm
    list_display = (
        "name",
        "enforcement_mode",
        "context_bucket",
        "priority",
        "version",
        "active",
        "council_required",
    )
    list_filter = ("enforcement_mode", "context_bucket", "active", "council_required")
    search_fields = ("name", "description", "tool_patterns")
    readonly_fields = ("id", "version", "created_at", "updated_at")

    def proposal_for(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> tuple[str, str, dict[str, Any], str] | None:
        if not change:
            return None
        stored = ValidationPolicy.objects.get(pk=obj.pk)
        if not stored.council_required:
            return None
        governed = [f for f in VPOL_FIELDS if getattr(obj, f) != getattr(stored, f)]
        if not governed:
            return None
        proposed = {f: getattr(obj, f) for f in governed}
        for name in governed:  # what else was edited (name, description) is saved now
            setattr(obj, name, getattr(stored, name))
        validation_policy_save(policy=obj, is_new=False)
        return ("vpol", stored.name, proposed, f"Change V-Pol {stored.name}: {', '.join(governed)}")

    def save_directly(
        self, request: HttpRequest, obj: ValidationPolicy, form: forms.ModelForm, change: bool
    ) -> None:
        validation_policy_save(policy=obj, is_new=not change)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.council_required and needs_council(request.user):
            return False
        return super().has_delete_permission(request, obj)


class PrimeDirectiveForm(forms.ModelForm):
    class Meta:
        model = PrimeDirective
        fields = "__all__"

    def clean_predicates(self) -> Any:
        predicates = self.cleaned_data["predicates"]
        problems = vpol_rules_errors(predicates, actions=("deny", "escalate"))
        if problems:
            raise forms.ValidationError(problems)
        return predicates


@admin.register(PrimeDirective)
class PrimeDirectiveAdmin(CouncilGatedAdmin, JSONEditingMixin, SimpleHistoryAdmin):
    """Adding or changing a directive opens a council proposal (once the council is seated)."""

    form = PrimeDirectiveForm
    list_display = ("code", "priority", "active", "short_scope")
    list_filter = ("active",)
    search_fields = ("code", "scope", "rule_text")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="scope")
    def short_scope(self, obj: PrimeDirective) -> str:
        return obj.scope[:100]

    def proposal_for(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> tuple[str, str, dict[str, Any], str] | None:
        stored = PrimeDirective.objects.filter(pk=obj.pk).first() if change else None
        names = [
            f for f in DIRECTIVE_FIELDS if stored is None or getattr(obj, f) != getattr(stored, f)
        ]
        if not names:
            return None
        proposed = {f: getattr(obj, f) for f in names}
        verb = "Change" if change else "Add"
        return ("directive", obj.code, proposed, f"{verb} prime directive {obj.code}")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not needs_council(request.user) and super().has_delete_permission(request, obj)


class ConstitutionRuleForm(forms.ModelForm):
    class Meta:
        model = ConstitutionRule
        fields = "__all__"

    def clean_predicates(self) -> Any:
        predicates = self.cleaned_data["predicates"]
        problems = vpol_rules_errors(predicates, actions=("deny",))
        if problems:
            raise forms.ValidationError(problems)
        return predicates

    def clean_enforcement(self) -> str:
        enforcement = str(self.cleaned_data["enforcement"])
        if self.instance.pk and (
            ConstitutionRule.STRENGTH[enforcement]
            < ConstitutionRule.STRENGTH[self.instance.enforcement]
        ):
            raise forms.ValidationError(
                "Constitution rules can only be strengthened, never weakened."
            )
        return enforcement


@admin.register(ConstitutionRule)
class ConstitutionRuleAdmin(CouncilGatedAdmin, JSONEditingMixin, SimpleHistoryAdmin):
    """Rules are added, and may be strengthened; never removed, reworded or weakened. Either
    opens a council proposal once the council is seated."""

    form = ConstitutionRuleForm
    list_display = ("number", "code", "title", "enforcement", "created_at")
    list_filter = ("enforcement",)
    search_fields = ("code", "title", "text")
    ordering = ("number",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("created_at",)
        return ("code", "number", "title", "text", "predicates", "created_at")

    def proposal_for(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> tuple[str, str, dict[str, Any], str] | None:
        if change:
            if "enforcement" not in form.changed_data:
                return None
            return (
                "constitution_strengthen",
                obj.code,
                {"enforcement": obj.enforcement},
                f"Strengthen {obj.code} to {obj.enforcement}",
            )
        proposed = {
            "title": obj.title,
            "text": obj.text,
            "enforcement": obj.enforcement,
            "predicates": obj.predicates,
            "number": obj.number,
        }
        return ("constitution_add", obj.code, proposed, f"Add constitution rule {obj.code}")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ContextBucketDefinition)
class ContextBucketDefinitionAdmin(JSONEditingMixin, admin.ModelAdmin):
    """The 20 buckets are fixed; staff tune the bucket checker's keywords and exemplars."""

    list_display = ("number", "bucket", "scope", "keyword_count")
    search_fields = ("bucket", "scope", "keywords")
    readonly_fields = ("bucket", "number", "scope")
    ordering = ("number",)

    @admin.display(description="keywords")
    def keyword_count(self, obj: ContextBucketDefinition) -> int:
        return len(obj.keywords)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
