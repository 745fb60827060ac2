"""The Django admin is the tools registry and the audit reader (seed 000 §7, roadmap phase 1).

Admin classes translate and delegate: validation lives in ``brainframe.schemas``, changes that
carry rules in ``brainframe.services``. Audit tables are read-only here.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers  # noqa: F401  (admin.helpers below)
from django.db import models
from django.db.models import Case, Count, FloatField, QuerySet, Sum, Value, When
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from brainframe.choices import ExecutionMode, default_execution_mode, default_monitoring_ceiling
from brainframe.models import (
    Agent,
    AgentCredential,
    AgentNote,
    AgentTask,
    AlignmentSnapshot,
    ApprovalRequest,
    ConstitutionRule,
    ContextBucketDefinition,
    ContextBucketEntry,
    DecayRun,
    Deliverable,
    LLMUsage,
    ModelPrice,
    MonitoringLevelChange,
    OriginRegistry,
    PrimeDirective,
    ReasonEdge,
    ReasonLog,
    Tool,
    ToolCall,
    ValidationPolicy,
)
from brainframe.schemas import handler_config_errors, json_schema_errors, vpol_rules_errors
from brainframe.selectors import flatten, origin_chain
from brainframe.services.agents import agent_changed, agent_set_paused
from brainframe.services.alignment import monitoring_level_set
from brainframe.services.policies import validation_policy_save
from brainframe.services.search import semantic_search
from brainframe.services.tasks import task_announce
from brainframe.services.tools import tool_set_enabled, tool_set_execution_mode


def _pretty_json(value: Any) -> str:
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


# --- Tools registry ---------------------------------------------------------------------------


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


class LevelChangeInline(ReadOnlyInline):
    model = MonitoringLevelChange
    fk_name = "tool"
    fields = ("created_at", "from_level", "to_level", "rule", "reason", "changed_by")
    ordering = ("-created_at",)


class AgentLevelChangeInline(LevelChangeInline):
    fk_name = "agent"


@admin.register(Tool)
class ToolAdmin(JSONEditingMixin, LevelChangeAdmin, SimpleHistoryAdmin):
    form = ToolAdminForm
    list_display = (
        "tool_id",
        "category",
        "risk_level",
        "execution_mode",
        "validation_mode",
        "monitoring_level",
        "alignment_score_90d",
        "data_class",
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
    readonly_fields = ("alignment_score_90d", "created_at", "updated_at")
    inlines = [LevelChangeInline]
    actions = ["disable_tools", "enable_tools", "set_mode_auto", "set_mode_review"]
    fieldsets = (
        (None, {"fields": ("tool_id", "description", "category", "context_bucket")}),
        ("Access", {"fields": ("agent_access", "role_requirements")}),
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
class ValidationPolicyAdmin(JSONEditingMixin, SimpleHistoryAdmin):
    form = ValidationPolicyForm
    list_display = ("name", "enforcement_mode", "context_bucket", "priority", "version", "active")
    list_filter = ("enforcement_mode", "context_bucket", "active")
    search_fields = ("name", "description", "tool_patterns")
    readonly_fields = ("id", "version", "created_at", "updated_at")

    def save_model(
        self, request: HttpRequest, obj: ValidationPolicy, form: forms.ModelForm, change: bool
    ) -> None:
        validation_policy_save(policy=obj, is_new=not change)


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
class PrimeDirectiveAdmin(JSONEditingMixin, SimpleHistoryAdmin):
    form = PrimeDirectiveForm
    list_display = ("code", "priority", "active", "short_scope")
    list_filter = ("active",)
    search_fields = ("code", "scope", "rule_text")
    readonly_fields = ("created_at", "updated_at")

    @admin.display(description="scope")
    def short_scope(self, obj: PrimeDirective) -> str:
        return obj.scope[:100]


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
class ConstitutionRuleAdmin(JSONEditingMixin, SimpleHistoryAdmin):
    """Rules are added, and may be strengthened; never removed, reworded or weakened."""

    form = ConstitutionRuleForm
    list_display = ("number", "code", "title", "enforcement", "created_at")
    list_filter = ("enforcement",)
    search_fields = ("code", "title", "text")
    ordering = ("number",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ("created_at",)
        return ("code", "number", "title", "text", "predicates", "created_at")

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


# --- Agents -----------------------------------------------------------------------------------


class AgentNoteInline(admin.TabularInline):
    model = AgentNote
    extra = 0
    fields = ("note_type", "content", "priority", "active")


class AgentCredentialInline(ReadOnlyInline):
    model = AgentCredential
    fields = ("fingerprint", "created_at", "revoked_at")
    verbose_name_plural = "signing keys (issue with: manage.py agent_key <agent_id>)"


class AgentAdminForm(LevelChangeForm):
    class Meta:
        model = Agent
        fields = "__all__"


@admin.register(Agent)
class AgentAdmin(JSONEditingMixin, LevelChangeAdmin):
    form = AgentAdminForm
    list_display = (
        "agent_id",
        "name",
        "type",
        "role",
        "status",
        "monitoring_level",
        "alignment_score_90d",
        "last_heartbeat_at",
    )
    list_filter = ("type", "status", "monitoring_level", "trust_level")
    search_fields = ("agent_id", "name", "role")
    readonly_fields = (
        "alignment_score_90d",
        "last_heartbeat_at",
        "uptime_seconds",
        "created_at",
        "updated_at",
    )
    inlines = [AgentNoteInline, AgentCredentialInline, AgentLevelChangeInline]
    actions = ["pause_agents", "resume_agents"]

    def save_model(
        self, request: HttpRequest, obj: Agent, form: forms.ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        if change and form.changed_data:
            agent_changed(agent=obj)

    @admin.action(description="Pause selected agents (the broker refuses their requests)")
    def pause_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = agent_set_paused(agents=queryset, paused=True)
        self.message_user(request, f"{count} agent(s) paused.", messages.SUCCESS)

    @admin.action(description="Resume selected agents")
    def resume_agents(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        count = agent_set_paused(agents=queryset, paused=False)
        self.message_user(request, f"{count} agent(s) may work again.", messages.SUCCESS)


@admin.register(AgentNote)
class AgentNoteAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = ("agent", "note_type", "short_content", "priority", "active", "updated_at")
    list_filter = ("note_type", "active", "agent")
    search_fields = ("content", "agent__agent_id")
    list_select_related = ("agent",)
    autocomplete_fields = ("agent",)
    readonly_fields = ("created_by", "created_at", "updated_at")

    @admin.display(description="content")
    def short_content(self, obj: AgentNote) -> str:
        return obj.content[:80]

    def save_model(
        self, request: HttpRequest, obj: AgentNote, form: forms.ModelForm, change: bool
    ) -> None:
        if not change and request.user.is_authenticated:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(AgentCredential)
class AgentCredentialAdmin(ReadOnlyAdmin):
    list_display = ("agent", "fingerprint", "created_at", "revoked_at")
    list_filter = ("agent",)
    search_fields = ("agent__agent_id", "fingerprint")
    list_select_related = ("agent",)
    exclude = ("secret_encrypted",)


# --- Work -------------------------------------------------------------------------------------


@admin.register(AgentTask)
class AgentTaskAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = (
        "title",
        "agent",
        "status",
        "priority",
        "progress",
        "created_at",
        "completed_at",
    )
    list_filter = ("status", "agent")
    search_fields = ("title", "task_id")
    list_select_related = ("agent",)
    autocomplete_fields = ("agent", "on_behalf_of")
    raw_id_fields = ("o_tag",)
    readonly_fields = ("task_id", "created_at", "started_at", "completed_at", "updated_at")

    def save_model(
        self, request: HttpRequest, obj: AgentTask, form: forms.ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        moved_from = form.initial.get("agent") if "agent" in form.changed_data else None
        task_announce(obj, also_agent_id=moved_from)  # staff's edit shows on open boards


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(JSONEditingMixin, admin.ModelAdmin):
    """Reviewers decide on the board; the admin shows the queue and its history."""

    list_display = (
        "tool",
        "agent",
        "kind",
        "status",
        "risk_level",
        "confidence",
        "reviewer_group",
        "timeout_at",
        "decided_by",
    )
    list_filter = ("status", "kind", "risk_level", "reviewer_group", "agent")
    search_fields = ("tool__tool_id", "reason", "summary")
    list_select_related = ("tool", "agent", "decided_by")
    show_full_result_count = False
    readonly_fields = (
        "id",
        "tool",
        "agent",
        "tool_call",
        "task",
        "r_tag",
        "vpol",
        "vpol_version",
        "kind",
        "pretty_arguments",
        "arguments_hash",
        "reason",
        "summary",
        "risk_level",
        "confidence",
        "tags",
        "status",
        "reviewer_group",
        "timeout_at",
        "created_at",
        "decided_at",
        "decided_by",
        "decision_reason",
        "modified_arguments",
        "escalation_count",
    )
    exclude = ("arguments",)

    actions = ["approve_selected", "reject_selected", "escalate_selected"]

    @admin.display(description="arguments")
    def pretty_arguments(self, obj: ApprovalRequest) -> str:
        return _pretty_json(obj.arguments)

    def _decide_all(
        self,
        request: HttpRequest,
        queryset: QuerySet[ApprovalRequest],
        action: str,
        reason: str = "",
    ) -> None:
        from broker.services.approvals import ApprovalError, approval_decide

        done, refused = 0, []
        for approval_id in queryset.values_list("pk", flat=True):
            try:
                approval_decide(
                    approval_id=approval_id,
                    reviewer=request.user,  # type: ignore[arg-type]
                    action=action,
                    reason=reason,
                )
                done += 1
            except ApprovalError as exc:
                refused.append(f"{str(approval_id)[:8]}: {exc.detail}")
        if done:
            self.message_user(request, f"{action.title()}d {done} approval(s).", messages.SUCCESS)
        for problem in refused:
            self.message_user(request, f"Not {action}d — {problem}", messages.WARNING)

    @admin.action(description="Approve selected (runs each call once)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        self._decide_all(request, queryset, "approve", "approved in the admin")

    @admin.action(description="Escalate selected to senior reviewers")
    def escalate_selected(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        self._decide_all(request, queryset, "escalate", "escalated in the admin")

    @admin.action(description="Reject selected (asks for the reason)")
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]
    ) -> TemplateResponse | None:
        reason = request.POST.get("rejection_reason", "").strip()
        if request.POST.get("confirm") and reason:
            self._decide_all(request, queryset, "reject", reason)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Reject approvals",
            "approvals": queryset,
            "opts": self.model._meta,
            "missing_reason": bool(request.POST.get("confirm")),
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/brainframe/approval_reject.html", context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created only by the broker

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Deliverable)
class DeliverableAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = ("filename", "agent", "task", "content_type", "size_bytes", "created_at")
    list_filter = ("agent", "content_type")
    search_fields = ("filename", "sha256")
    list_select_related = ("agent", "task")
    readonly_fields = ("id", "size_bytes", "sha256", "created_at")
    raw_id_fields = ("task",)


# --- Memory -----------------------------------------------------------------------------------


class SemanticSearchMixin(admin.ModelAdmin):
    """The admin search box also searches by meaning, best matches first.

    Text matches (``search_fields``) and the semantic search's hits are shown together, ordered
    by the semantic score (``brainframe.services.search``); the list filters still apply.
    """

    semantic_kind: str = ""
    semantic_limit = 50

    @staticmethod
    def _term(request: HttpRequest) -> str:
        return request.GET.get("q", "").strip()

    def _scores(self, request: HttpRequest) -> dict[Any, float]:
        cached: dict[Any, float] | None = getattr(request, "_semantic_scores", None)
        if cached is None:
            result = semantic_search(
                self._term(request), kinds=(self.semantic_kind,), limit=self.semantic_limit
            )
            cached = {hit.id: hit.score for hit in result.hits}
            request._semantic_scores = cached  # type: ignore[attr-defined]
        return cached

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        if not self._term(request):
            return super().get_queryset(request)
        request._semantic_ranked = False  # type: ignore[attr-defined]
        qs = super().get_queryset(request)  # default ordering: no rank annotated yet
        scores = self._scores(request)
        rank = Case(
            *[When(pk=pk, then=Value(score)) for pk, score in scores.items()],
            default=Value(0.0),
            output_field=FloatField(),
        )
        request._semantic_ranked = True  # type: ignore[attr-defined]
        return qs.annotate(semantic_rank=rank)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        matched, duplicates = super().get_search_results(request, queryset, search_term)
        if not search_term.strip() or not getattr(request, "_semantic_ranked", False):
            return matched, duplicates
        return matched | queryset.filter(pk__in=list(self._scores(request))), duplicates

    def get_ordering(self, request: HttpRequest) -> list[str] | tuple[str, ...]:
        # Only once get_queryset has annotated the rank (the changelist asks again after).
        if getattr(request, "_semantic_ranked", False):
            return ["-semantic_rank"]
        return super().get_ordering(request)

    @admin.display(description="match", ordering="semantic_rank")
    def search_match(self, obj: Any) -> str:
        rank = getattr(obj, "semantic_rank", None)
        return "—" if rank is None else f"{rank:.2f}"

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = tuple(super().get_list_display(request))
        return (*shown, "search_match") if self._term(request) else shown


@admin.register(ContextBucketEntry)
class ContextBucketEntryAdmin(JSONEditingMixin, SemanticSearchMixin):
    semantic_kind = "observation"
    list_display = (
        "bucket",
        "entity",
        "pattern_type",
        "short_observation",
        "severity",
        "frequency",
        "decay",
        "current_score",
        "has_embedding",
    )
    list_filter = ("bucket", "pattern_type", "severity")
    search_fields = ("entity", "observation", "pattern_type")
    list_select_related = ("source_agent",)
    show_full_result_count = False
    exclude = ("vector",)
    readonly_fields = ("current_score", "embedding_model", "created_at", "last_reinforced_at")

    @admin.display(description="observation")
    def short_observation(self, obj: ContextBucketEntry) -> str:
        return obj.observation[:80]

    @admin.display(boolean=True, description="embedded")
    def has_embedding(self, obj: ContextBucketEntry) -> bool:
        return obj.vector is not None


# --- Audit (append-only, read-only) -----------------------------------------------------------


@admin.register(OriginRegistry)
class OriginRegistryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "origin_type",
        "source_ref",
        "bucket",
        "registered_by",
        "timestamp",
        "chain_link",
    )
    list_filter = ("origin_type", "bucket")
    search_fields = ("id", "source_ref")
    list_select_related = ("registered_by",)
    show_full_result_count = False
    readonly_fields = ("chain_link",)

    @admin.display(description="chain")
    def chain_link(self, obj: OriginRegistry) -> str:
        url = reverse("admin:brainframe_originregistry_chain", args=[obj.pk])
        return format_html('<a href="{}">everything from this origin →</a>', url)

    def get_urls(self) -> list[URLPattern]:
        chain = path(
            "<uuid:o_tag>/chain/",
            self.admin_site.admin_view(self.chain_view),
            name="brainframe_originregistry_chain",
        )
        return [chain, *super().get_urls()]

    def chain_view(self, request: HttpRequest, o_tag: uuid.UUID) -> HttpResponse:
        origin, roots = origin_chain(o_tag=o_tag)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Chain of {origin.get_origin_type_display()} {origin.source_ref[:60]}",
            "origin": origin,
            "nodes": flatten(roots),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/brainframe/origin_chain.html", context)


class ReasonEdgeInline(ReadOnlyInline):
    model = ReasonEdge
    fields = ("entity_type", "entity_id", "relationship", "created_at")


@admin.register(ReasonLog)
class ReasonLogAdmin(SemanticSearchMixin, ReadOnlyAdmin):
    semantic_kind = "reason"
    list_display = ("id", "agent", "tool", "short_thought", "o_tag", "vpol", "created_at")
    list_filter = ("agent",)
    search_fields = ("id", "thought", "chain_id")
    list_select_related = ("agent", "tool", "vpol")
    show_full_result_count = False
    exclude = ("vector",)
    inlines = [ReasonEdgeInline]

    @admin.display(description="thought")
    def short_thought(self, obj: ReasonLog) -> str:
        return obj.thought[:80]


@admin.register(ReasonEdge)
class ReasonEdgeAdmin(ReadOnlyAdmin):
    list_display = ("reason", "relationship", "entity_type", "entity_id", "created_at")
    list_filter = ("relationship", "entity_type")
    search_fields = ("entity_id", "entity_type")
    show_full_result_count = False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    readonly_fields = ("chain_link",)

    @admin.display(description="chain")
    def chain_link(self, obj: ToolCall) -> str:
        if obj.o_tag_id is None:
            return "—"
        url = reverse("admin:brainframe_originregistry_chain", args=[obj.o_tag_id])
        return format_html('<a href="{}">origin and every decision in its chain →</a>', url)

    list_display = (
        "timestamp",
        "agent",
        "requested_tool_id",
        "decision",
        "decision_code",
        "outcome",
        "duration_ms",
        "alignment_rating",
    )
    list_filter = ("decision", "outcome", "agent")
    search_fields = ("id", "requested_tool_id", "decision_code")
    list_select_related = ("agent",)
    show_full_result_count = False
    date_hierarchy = "timestamp"


@admin.register(DecayRun)
class DecayRunAdmin(ReadOnlyAdmin):
    list_display = ("night", "applied_at", "rows_updated")
    date_hierarchy = "night"
    search_fields = ("night",)


@admin.register(AlignmentSnapshot)
class AlignmentSnapshotAdmin(ReadOnlyAdmin):
    list_display = (
        "date",
        "tool",
        "agent",
        "score",
        "level",
        "volume_30d",
        "misalignments_30d",
        "high_priority_30d",
    )
    list_filter = ("level", "agent")
    search_fields = ("tool__tool_id", "agent__agent_id")
    list_select_related = ("tool", "agent")
    date_hierarchy = "date"
    show_full_result_count = False


@admin.register(MonitoringLevelChange)
class MonitoringLevelChangeAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "tool", "agent", "from_level", "to_level", "rule", "changed_by")
    list_filter = ("rule", "to_level")
    search_fields = ("tool__tool_id", "agent__agent_id", "reason")
    list_select_related = ("tool", "agent", "changed_by")


# --- LLM cost ---------------------------------------------------------------------------------


@admin.register(ModelPrice)
class ModelPriceAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = ("model", "input_per_million", "output_per_million", "per_minute", "updated_at")
    search_fields = ("model",)


@admin.register(LLMUsage)
class LLMUsageAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "agent",
        "mode",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
        "cost",
        "task",
    )
    list_filter = ("mode", "agent", "model")
    search_fields = ("model", "query_ref", "agent__agent_id")
    list_select_related = ("agent", "task")
    date_hierarchy = "created_at"
    show_full_result_count = False

    @admin.display(description="cost (USD)", ordering="cost_usd")
    def cost(self, obj: LLMUsage) -> str:
        return "no price" if obj.cost_usd is None else f"{obj.cost_usd:.4f}"

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if isinstance(response, TemplateResponse) and changelist is not None:
            assert response.context_data is not None
            totals = changelist.queryset.aggregate(total=Sum("cost_usd"), queries=Count("id"))
            response.context_data["title"] = (
                f"LLM usage: {totals['queries']} "
                f"{'query' if totals['queries'] == 1 else 'queries'}, "
                f"USD {totals['total'] or 0:.4f} (filtered)"
            )
        return response
