"""The event log (read-only), its SIEM sinks, hooks, and the views and index built from it."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from brainframe.events import EVENT_FAMILIES
from brainframe.models import (
    AgentCard,
    DiscoveryEntry,
    EventLogEntry,
    EventSink,
    Hook,
    HookCursor,
    HookMessage,
    KanbanCard,
    PlanRecord,
)
from brainframe.services.eventlog.reading import event_summary
from brainframe.services.eventlog.sinks import SinkError, sink_deliver, sink_set
from brainframe.services.hooks.checks import HookError
from brainframe.services.hooks.lifecycle import hook_review, hook_set_enabled

from .common import ReadOnlyAdmin


@admin.register(EventLogEntry)
class EventLogEntryAdmin(ReadOnlyAdmin):
    """Every named event as it was kept (``verify_audit`` checks the chains)."""

    list_display = ("at", "name", "agent_id", "subject", "summary", "stream", "seq")
    list_filter = ("family", "name")
    search_fields = ("subject", "agent_id", "name")
    date_hierarchy = "at"
    show_full_result_count = False
    readonly_fields = ("summary",)

    @admin.display(description="what")
    def summary(self, obj: EventLogEntry) -> str:
        return event_summary(obj.name, obj.payload)


class EventSinkForm(forms.ModelForm):
    url = forms.URLField(
        max_length=500, assume_scheme="https", help_text="Where the events are POSTed (JSON)."
    )
    secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="The HMAC-SHA256 signing secret the receiver checks (at least 16 characters). "
        "Stored encrypted; leave empty to keep the stored one.",
    )
    families = forms.MultipleChoiceField(
        choices=[(f, f) for f in EVENT_FAMILIES],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Only these families (none ticked: every event).",
    )

    class Meta:
        model = EventSink
        fields = ("name", "url", "families", "enabled", "batch_size")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            self.instance = sink_set(
                name=cleaned["name"],
                url=cleaned["url"],
                secret=cleaned.get("secret") or None,
                families=cleaned.get("families") or [],
                enabled=cleaned.get("enabled", True),
                batch_size=cleaned.get("batch_size") or 100,
                sink=self.instance if self.instance.pk else None,
            )
        except SinkError as exc:
            field = exc.field if exc.field in self.fields else None
            raise forms.ValidationError({field: exc.detail} if field else exc.detail) from None
        return cleaned


@admin.register(EventSink)
class EventSinkAdmin(admin.ModelAdmin):
    """Receivers of the event log (a SIEM): signed JSON POSTs, at least once; see
    docs/events.md for the format and the signature."""

    form = EventSinkForm
    list_display = ("name", "url", "enabled", "delivered", "state", "last_delivery_at")
    readonly_fields = ("delivered", "failures", "next_attempt_at", "last_delivery_at", "state")
    actions = ["deliver_now", "send_from_start"]

    @admin.display(description="state")
    def state(self, obj: EventSink) -> str:
        if obj.last_error:
            return format_html(
                '<span class="errornote">failing ({} in a row): {}</span>',
                obj.failures,
                obj.last_error,
            )
        return "ok"

    def save_model(
        self, request: HttpRequest, obj: EventSink, form: forms.ModelForm, change: bool
    ) -> None:
        pass  # the form's clean() saved it through sink_set (validation and encryption)

    @admin.action(description="Deliver to the selected sinks now")
    def deliver_now(self, request: HttpRequest, queryset: QuerySet[EventSink]) -> None:
        for sink in queryset:
            result = sink_deliver(sink.pk)
            level = messages.ERROR if result.get("error") else messages.SUCCESS
            self.message_user(request, f"{sink.name}: {result}", level)

    @admin.action(description="Send the selected sinks everything again, from the start")
    def send_from_start(self, request: HttpRequest, queryset: QuerySet[EventSink]) -> None:
        count = queryset.update(cursor={}, failures=0, next_attempt_at=None, last_error="")
        self.message_user(request, f"{count} sink(s) will get the whole log again.")


@admin.register(Hook)
class HookAdmin(admin.ModelAdmin):
    """Hooks agents proposed: approve or reject the proposed, enable or disable the rest. A
    definition is the agent's: staff decide on it, they do not rewrite it (docs/hooks.md)."""

    list_display = (
        "name",
        "agent",
        "kind",
        "status",
        "fired",
        "consecutive_errors",
        "last_fired_at",
    )
    list_filter = ("status", "kind", "agent")
    search_fields = ("name", "description", "agent__agent_id")
    actions = ["approve", "reject", "enable", "disable"]
    readonly_fields = [f.name for f in Hook._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # agents propose hooks (POST /api/v1/hooks/)

    def _each(self, request: HttpRequest, queryset: QuerySet[Hook], act: Any) -> None:
        done = 0
        for hook in queryset:
            try:
                act(hook)
                done += 1
            except HookError as exc:
                self.message_user(request, f"{hook.name}: {exc.detail}", messages.WARNING)
        self.message_user(request, f"{done} hook(s) changed.", messages.SUCCESS)

    @admin.action(description="Approve the selected proposed hooks")
    def approve(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        self._each(
            request, queryset, lambda h: hook_review(hook=h, reviewer=request.user, approve=True)
        )

    @admin.action(description="Reject the selected proposed hooks")
    def reject(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        self._each(
            request,
            queryset,
            lambda h: hook_review(
                hook=h, reviewer=request.user, approve=False, reason="rejected in the admin"
            ),
        )

    @admin.action(description="Enable the selected hooks")
    def enable(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        who = request.user.get_username()
        self._each(request, queryset, lambda h: hook_set_enabled(hook=h, enabled=True, by=who))

    @admin.action(description="Disable the selected hooks")
    def disable(self, request: HttpRequest, queryset: QuerySet[Hook]) -> None:
        who = request.user.get_username()
        self._each(request, queryset, lambda h: hook_set_enabled(hook=h, enabled=False, by=who))


@admin.register(HookMessage)
class HookMessageAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "agent", "hook", "text", "delivered_at")
    list_filter = ("agent",)
    search_fields = ("text",)


@admin.register(HookCursor)
class HookCursorAdmin(ReadOnlyAdmin):
    list_display = ("id", "cursor", "updated_at")


@admin.register(KanbanCard)
class KanbanCardAdmin(ReadOnlyAdmin):
    """The Kanban as the event log has it (rebuilt by ``replay_events --view kanban``)."""

    list_display = ("task_id", "agent_id", "status", "title", "priority", "updated_at")
    list_filter = ("status", "agent_id")
    search_fields = ("title", "agent_id")


@admin.register(PlanRecord)
class PlanRecordAdmin(ReadOnlyAdmin):
    """The agents' plan history (``planner:*``; ``replay_events --view plans``)."""

    list_display = ("plan_id", "agent_id", "goal", "status", "saved_at", "updated_at")
    list_filter = ("status", "agent_id")
    search_fields = ("plan_id", "goal", "agent_id")


@admin.register(DiscoveryEntry)
class DiscoveryEntryAdmin(ReadOnlyAdmin):
    """What discovery searches: tools and plans, with or without their embedding yet."""

    list_display = ("kind", "key", "agent_id", "embedded", "updated_at")
    list_filter = ("kind",)
    search_fields = ("key", "text", "agent_id")
    exclude = ("vector",)

    @admin.display(boolean=True, description="embedded")
    def embedded(self, obj: DiscoveryEntry) -> bool:
        return obj.vector is not None


@admin.register(AgentCard)
class AgentCardAdmin(ReadOnlyAdmin):
    """Status cards as the event log has them (``replay_events --view agents``)."""

    list_display = ("agent_id", "status", "status_at", "counts")
