"""The Celery app. Tasks live in each app's ``tasks.py``; the beat schedule is in code below."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")

app = Celery("rabs")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Scheduled jobs are added by the issues that own them (approval expiry, decay, alignment).
app.conf.beat_schedule = {}
