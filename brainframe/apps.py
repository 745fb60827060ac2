from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.apps import AppConfig


class BrainframeConfig(AppConfig):
    """The brainframe schema (agents, tools, policies, audit, memory) and governance services."""

    name = "brainframe"
    verbose_name = "Brainframe"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Services import models, which cannot be imported before the app registry is ready.
        from .jobs import job_register
        from .services.alignment import alignment_nightly
        from .services.council import proposals_close_due
        from .services.grants import grants_expire
        from .services.indexing import index_sweep
        from .services.relevance import decay_run
        from .services.supervisors import supervisors_check

        def decay(day: date) -> Any:
            # The 02:00 run on the morning after ``day`` is that night's decay.
            return decay_run(night=day + timedelta(days=1))

        job_register("index", lambda day: index_sweep())
        job_register("decay", decay)
        job_register("alignment", lambda day: alignment_nightly(day=day))
        job_register("expire_grants", lambda day: {"withdrawn": grants_expire()})
        job_register("check_supervisors", lambda day: supervisors_check())
        job_register("close_council_votes", lambda day: {"closed": proposals_close_due()})
