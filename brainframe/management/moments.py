"""``--since`` of the commands that read history: an ISO 8601 date or time (local time when it
names no zone)."""

from __future__ import annotations

from datetime import datetime

from django.core.management.base import CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime


def since_moment(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise CommandError(f"--since: not an ISO 8601 date or time: {text!r}")
        moment = datetime(day.year, day.month, day.day)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)
