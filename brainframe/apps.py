from __future__ import annotations

from django.apps import AppConfig


class BrainframeConfig(AppConfig):
    """The brainframe schema (agents, tools, policies, audit, memory) and governance services."""

    name = "brainframe"
    verbose_name = "Brainframe"
    default_auto_field = "django.db.models.BigAutoField"
