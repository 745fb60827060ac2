"""Run a scheduled job once by hand, as of a given date."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.jobs import JOBS, job_run


class Command(BaseCommand):
    help = "Run one scheduled job now, for operators and tests: " + ", ".join(sorted(JOBS))

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", choices=sorted(JOBS))
        parser.add_argument("--date", help="YYYY-MM-DD the job runs for (default: yesterday)")

    def handle(self, *args: Any, **options: Any) -> None:
        day = None
        if options["date"]:
            try:
                day = date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date must be YYYY-MM-DD, not {options['date']!r}") from None
        result = job_run(name=options["name"], day=day)
        self.stdout.write(json.dumps(result, default=str))
