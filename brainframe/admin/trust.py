"""Trust over time (read-only): decay runs, alignment snapshots, monitoring-level changes."""

from __future__ import annotations

from django.contrib import admin

from brainframe.models import (
    AlignmentSnapshot,
    DecayRun,
    MonitoringLevelChange,
)

from .common import (
    ReadOnlyAdmin,
)


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
