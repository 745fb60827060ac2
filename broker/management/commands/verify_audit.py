"""Check every agent's tool_calls hash chain (and the council's vote chains, the event log's
chains, the events ledger and every conversation thread's Merkle chain); exit non-zero naming
the first row that breaks."""

from __future__ import annotations

import os
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import ToolCall
from brainframe.services.council.votes import council_votes_verify
from brainframe.services.eventlog.reading import event_log_verify
from brainframe.services.ledger.ledgers import ledgers_verify
from broker.audit.verify import verify_chain


class Command(BaseCommand):
    help = "Verify the tamper-evident audit: every tool_calls chain, row by row."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="verify only this agent's chain")
        parser.add_argument(
            "--workers",
            type=int,
            default=os.cpu_count() or 1,
            help="processes per long chain (default: one per CPU; 1 verifies in this process)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        agents = (
            [options["agent"]]
            if options["agent"]
            else list(ToolCall.objects.values_list("agent_id", flat=True).distinct().order_by())
        )
        started = time.monotonic()
        broken: list[str] = []
        for agent_id in agents:
            problem = verify_chain(agent_id, workers=max(1, options["workers"]))
            if problem is not None:
                broken.append(str(problem))
                self.stderr.write(str(problem))
        if not options["agent"]:
            for other_problem in (
                *council_votes_verify(),
                *event_log_verify(),
                *ledgers_verify(),
            ):
                broken.append(other_problem)
                self.stderr.write(other_problem)
        rows = ToolCall.objects.filter(agent_id__in=agents).count()
        elapsed = time.monotonic() - started
        if broken:
            raise CommandError(f"audit verification FAILED: {len(broken)} broken chain(s)")
        self.stdout.write(
            self.style.SUCCESS(
                f"audit intact: {len(agents)} chain(s), {rows} row(s) verified in {elapsed:.2f}s"
            )
        )
