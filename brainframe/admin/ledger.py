"""People and their channel identities, and the two ledgers (read-only here: they are written by
the broker and verified by ``verify_audit``); delegations and learning cards. Channel adapters and
what was sent on them: ``channels``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from brainframe.models import (
    ChannelIdentity,
    Delegation,
    LearningCard,
    LedgerEvent,
    Message,
    Person,
    QueuedMessage,
    Session,
    Thread,
    TimerTicks,
    Turn,
)
from brainframe.services.ledger.ledgers import normalise_address

from .common import ReadOnlyAdmin, ReadOnlyInline


class ChannelIdentityForm(forms.ModelForm):
    class Meta:
        model = ChannelIdentity
        fields = ("channel", "address")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("channel") and data.get("address"):
            data["address"] = normalise_address(data["channel"], data["address"])
        return data


class ChannelIdentityInline(admin.TabularInline):
    model = ChannelIdentity
    form = ChannelIdentityForm
    extra = 1


@admin.register(Person)
class PersonAdmin(admin.ModelAdmin):
    """The people agents deal with; a message from one of their identities resolves to them."""

    list_display = ("name", "relationship", "acts_for", "groups", "active")
    list_filter = ("relationship", "active")
    search_fields = ("name", "identities__address")
    autocomplete_fields = ("acts_for",)
    inlines = [ChannelIdentityInline]


@admin.register(LedgerEvent)
class LedgerEventAdmin(ReadOnlyAdmin):
    """The events ledger: every external event as it arrived (permanent, hash-chained)."""

    list_display = ("seq", "received_at", "kind", "channel", "adapter", "sender", "person")
    list_filter = ("kind", "channel")
    search_fields = ("sender", "external_id", "text")
    date_hierarchy = "received_at"
    show_full_result_count = False


@admin.register(TimerTicks)
class TimerTicksAdmin(ReadOnlyAdmin):
    list_display = ("hour", "ticks", "first_at", "last_at")


class MessageInline(ReadOnlyInline):
    model = Message
    fields = ("seq", "role", "author", "content", "created_at")


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ("thread", "seq", "turn_type", "status", "agent", "started_at", "completed_at")
    list_filter = ("turn_type", "status")
    search_fields = ("thread__title", "agent__agent_id")
    inlines = [MessageInline]


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ("title", "agent", "turns_count", "parent", "updated_at", "board")
    search_fields = ("title", "agent__agent_id")

    @admin.display(description="conversation")
    def board(self, obj: Thread) -> str:
        return format_html(
            '<a href="{}">open on the board</a>',
            reverse("dashboard:conversation", args=[obj.pk]),
        )


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    """Sessions: staff may set a session's queue mode (empty: the agent's)."""

    list_display = ("key", "agent", "channel", "person", "queue_mode", "updated_at")
    list_filter = ("channel", "queue_mode")
    search_fields = ("key", "address")
    fields = ("key", "agent", "thread", "channel", "address", "person", "queue_mode")
    readonly_fields = ("key", "agent", "thread", "channel", "address", "person")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(QueuedMessage)
class QueuedMessageAdmin(ReadOnlyAdmin):
    list_display = ("session", "mode", "queued_at", "taken_by")
    list_filter = ("mode",)


@admin.register(Delegation)
class DelegationAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "manager", "worker", "depth", "task", "thread")
    list_filter = ("depth",)
    search_fields = ("manager__agent_id", "worker__agent_id", "instructions")


@admin.register(LearningCard)
class LearningCardAdmin(admin.ModelAdmin):
    """Lessons from reviewers, scheduled by SM-2 (staff may reword or retire one)."""

    list_display = ("agent", "tool_id", "lesson", "due_at", "repetitions", "last_grade", "active")
    list_filter = ("active", "agent")
    search_fields = ("lesson", "tool_id")
    fields = (
        "agent",
        "tool_id",
        "lesson",
        "active",
        "due_at",
        "easiness",
        "interval_days",
        "repetitions",
        "last_grade",
        "last_reviewed_at",
        "reviews",
        "approval",
    )
    readonly_fields = (
        "easiness",
        "interval_days",
        "repetitions",
        "last_grade",
        "last_reviewed_at",
        "reviews",
        "approval",
    )


@admin.register(ChannelIdentity)
class ChannelIdentityAdmin(admin.ModelAdmin):
    fields = ("person", "channel", "address")
    list_display = ("address", "channel", "person")
    list_filter = ("channel",)
    search_fields = ("address", "person__name")
    autocomplete_fields = ("person",)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "turn", "seq", "role", "author")
    list_filter = ("role",)
    search_fields = ("content", "author")
    show_full_result_count = False
