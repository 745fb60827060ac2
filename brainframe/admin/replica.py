"""The read replica's views: which the replica's read-only role may read (docs/agents.md)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from brainframe.models import ReplicaView
from brainframe.services.registry.replica import ReplicaSetupError, replica_grants_sync


@admin.register(ReplicaView)
class ReplicaViewAdmin(admin.ModelAdmin):
    list_display = ("name", "exposed", "description", "updated_at")
    list_filter = ("exposed",)
    search_fields = ("name", "description")
    readonly_fields = ("name", "updated_at")
    actions = ["expose", "hide"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the views are SQL in the migrations; staff choose among them

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _sync(self, request: HttpRequest) -> None:
        try:
            done = replica_grants_sync()
        except ReplicaSetupError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self.message_user(
            request, f"{done['role']} may read: {', '.join(done['views']) or 'nothing'}"
        )

    def save_model(self, request: HttpRequest, obj: ReplicaView, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        self._sync(request)

    @admin.action(description="Let the replica role read the selected views")
    def expose(self, request: HttpRequest, queryset: QuerySet[ReplicaView]) -> None:
        queryset.update(exposed=True)
        self._sync(request)

    @admin.action(description="Hide the selected views from the replica role")
    def hide(self, request: HttpRequest, queryset: QuerySet[ReplicaView]) -> None:
        queryset.update(exposed=False)
        self._sync(request)
