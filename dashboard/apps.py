from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The live board: Kanban, approvals and action log (HTMX + Channels)."""

    name = "dashboard"
    verbose_name = "Dashboard"
