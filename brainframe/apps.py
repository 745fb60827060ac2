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
        from .services.access.grants import grants_expire
        from .services.council.votes import proposals_close_due
        from .services.eventlog.sinks import sinks_deliver
        from .services.hooks.runner import hooks_run, hooks_tick
        from .services.ledger.ledgers import timer_tick
        from .services.memory.cards import cards_review_due
        from .services.memory.indexing import index_sweep
        from .services.memory.relevance import decay_run
        from .services.trust.nightly import alignment_nightly
        from .services.trust.proposals import rules_propose
        from .services.work.supervisors import supervisors_check

        def decay(day: date) -> Any:
            # The 02:00 run on the morning after ``day`` is that night's decay.
            return decay_run(night=day + timedelta(days=1))

        job_register("index", lambda day: index_sweep())
        job_register("decay", decay)
        job_register("alignment", lambda day: alignment_nightly(day=day))
        job_register("expire_grants", lambda day: {"withdrawn": grants_expire()})
        job_register("propose_rules", rules_propose)
        job_register("check_supervisors", lambda day: supervisors_check())
        job_register("close_council_votes", lambda day: {"closed": proposals_close_due()})
        job_register("deliver_events", lambda day: {"sinks": sinks_deliver()})
        job_register("run_hooks", lambda day: hooks_run())
        # The minute timer (seed 003): scheduled hooks, and the tick counted in the events
        # ledger's hourly aggregate.
        job_register("hook_timer", lambda day: {**hooks_tick(), "tick": timer_tick().ticks})
        job_register("learning_cards", lambda day: cards_review_due())
        _policy_signals()
        _task_signals()
        from .services.eventlog.views import (
            views_register,  # services import models: registry ready now
        )

        views_register()
        # Settings and the exporter's providers are needed only now, at start-up.
        from django.conf import settings

        from .telemetry import telemetry_from_settings

        telemetry_from_settings(settings.RABS_OTEL_ENDPOINT, settings.RABS_OTEL_SERVICE_NAME)


def _task_signals() -> None:
    """Every task saved (created in a service, the admin, the seed) is a ``task:changed`` event:
    the board and the Kanban view see it. Transitions that update in place announce themselves
    (``brainframe.services.work.tasks``). Models are imported inside: the app registry is not ready
    when this module loads."""
    from django.db.models.signals import post_save

    from .models import AgentTask
    from .services.work.tasks import task_announce

    def saved(sender: Any, instance: Any, raw: bool = False, **kw: Any) -> None:
        if not raw:
            task_announce(instance)

    post_save.connect(saved, sender=AgentTask, weak=False, dispatch_uid="task_saved")


def _policy_signals() -> None:
    """Every change of a governing rule, however it is made (admin, council, a command), is
    kept in the event log (``governance:policy_changed``). Models are imported inside: the app
    registry is not ready when this module loads."""
    from django.db.models.signals import post_delete, post_save

    from .models import ConstitutionRule, PrimeDirective, ValidationPolicy
    from .services.registry.policies import policy_changed_emit

    def saved(sender: Any, instance: Any, created: bool, raw: bool = False, **kw: Any) -> None:
        if not raw:  # not while loading fixtures
            policy_changed_emit(policy=instance, action="created" if created else "changed")

    def deleted(sender: Any, instance: Any, **kw: Any) -> None:
        policy_changed_emit(policy=instance, action="deleted")

    for model in (ValidationPolicy, PrimeDirective, ConstitutionRule):
        post_save.connect(saved, sender=model, weak=False, dispatch_uid=f"policy_saved_{model}")
        post_delete.connect(
            deleted, sender=model, weak=False, dispatch_uid=f"policy_deleted_{model}"
        )
