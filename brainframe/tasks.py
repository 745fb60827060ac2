"""Celery tasks for the scheduled jobs (beat schedule in ``rabs/celery.py``)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from brainframe.jobs import job_run


@shared_task
def run_scheduled_job(name: str) -> Any:
    return job_run(name=name)
