"""The Celery app. Tasks live in each app's ``tasks.py``; the beat schedule is in code below."""

from __future__ import annotations

import atexit
import logging
import os
from typing import Any

from celery import Celery, signals
from celery.schedules import crontab
from celery.signals import worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")

app = Celery("rabs")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Heartbeats (broker.liveness): a worker and beat each say they are alive every few seconds, so
# that /healthz, the board and an approved call's state can tell when none is running.
_hearts: dict[str, Any] = {}


@signals.worker_ready.connect
def _worker_heartbeat(**kwargs: Any) -> None:
    from broker.liveness import Heart  # Django's apps are ready only once the worker is

    _hearts["worker"] = Heart("worker").start()


@signals.worker_shutdown.connect
def _worker_heartbeat_stop(**kwargs: Any) -> None:
    heart = _hearts.pop("worker", None)
    if heart is not None:
        heart.stop()


@signals.beat_init.connect
def _beat_heartbeat(**kwargs: Any) -> None:
    from broker.liveness import Heart  # Django's apps are ready only once beat is

    heart = _hearts["beat"] = Heart("beat").start()
    atexit.register(heart.stop)  # beat has no shutdown signal


# The beat schedule, in the project's time zone (Australia/Brisbane). Every job is idempotent for
# its date, so a late or doubled run changes nothing; `expires` drops a run that waited too long.
app.conf.beat_schedule = {
    "expire-approvals": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("expire_approvals",),
        "options": {"expires": 55},
    },
    # Time-boxed capability grants whose time is up.
    "expire-grants": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("expire_grants",),
        "options": {"expires": 55},
    },
    # Council proposals whose vote deadline passed: rejected or expired.
    "close-council-votes": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("close_council_votes",),
        "options": {"expires": 55},
    },
    # Events pushed to subscribed external agents (and A2A push notifications): new ones, and
    # retries that are due.
    "deliver-webhooks": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 5.0,
        "args": ("deliver_webhooks",),
        "options": {"expires": 4},
    },
    # Reviewers' digest e-mails that are due.
    "send-digests": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("send_digests",),
        "options": {"expires": 55},
    },
    # Answers and posts on their channels: attempts that are due, lost submissions (15 s).
    "deliver-replies": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 15.0,
        "args": ("deliver_replies",),
        "options": {"expires": 14},
    },
    # Each agent supervisor's health, for the board.
    "check-supervisors": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("check_supervisors",),
        "options": {"expires": 55},
    },
    # The event log out to the SIEM sinks (signed POSTs, at least once).
    "deliver-events": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 30.0,
        "args": ("deliver_events",),
        "options": {"expires": 25},
    },
    # Hooks on the events logged since the last run; the minute timer of scheduled hooks.
    "run-hooks": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 15.0,
        "args": ("run_hooks",),
        "options": {"expires": 14},
    },
    "hook-timer": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("hook_timer",),
        "options": {"expires": 55},
    },
    # A signed checkpoint of the chains' heads, when any moved (broker.audit.checkpoints).
    "write-checkpoint": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 60.0,
        "args": ("checkpoint",),
        "options": {"expires": 55},
    },
    # Every upstream MCP server's tools listed again: a changed definition is refused until
    # staff accept it (besides the upstreams' own tools/list_changed notices).
    "relist-upstreams": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 300.0,
        "args": ("relist_upstreams",),
        "options": {"expires": 290},
    },
    # Embeddings and bucket classification that a failed enqueue left behind.
    "index-sweep": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": 300.0,
        "args": ("index",),
        "options": {"expires": 290},
    },
    "decay-nightly": {
        "task": "brainframe.tasks.run_scheduled_job",
        "schedule": crontab(hour=2, minute=0),
        "args": ("decay",),
        "options": {"expires": 6 * 3600},
    },
    "alignment-nightly": {
        "task": "brainframe.tasks.run_scheduled_job",
        # After the 02:00 decay.
        "schedule": crontab(hour=2, minute=30),
        "args": ("alignment",),
        "options": {"expires": 6 * 3600},
    },
    "propose-rules-nightly": {
        "task": "brainframe.tasks.run_scheduled_job",
        # After the day's rejections and refusals are all in (docs/access.md).
        "schedule": crontab(hour=2, minute=50),
        "args": ("propose_rules",),
        "options": {"expires": 6 * 3600},
    },
    "learning-cards-nightly": {
        "task": "brainframe.tasks.run_scheduled_job",
        # After the alignment job has rated the day's calls: the due cards graded by them.
        "schedule": crontab(hour=2, minute=45),
        "args": ("learning_cards",),
        "options": {"expires": 6 * 3600},
    },
}


@worker_shutdown.connect
def _checkpoint_at_shutdown(**kwargs: object) -> None:
    """A worker stopping signs the heads as they are: what happened since the last minute's
    checkpoint is not left unsigned until the next start."""
    # Imported here: this module loads before Django's app registry is ready.
    from brainframe.jobs import job_run

    try:
        job_run(name="checkpoint_shutdown")
    except Exception:  # the database may already be gone: the next start signs it
        logging.getLogger(__name__).warning("no checkpoint at shutdown", exc_info=True)
