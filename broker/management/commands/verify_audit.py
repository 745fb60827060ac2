"""Check every agent's tool_calls hash chain (and the council's vote chains, the event log's
chains, the events ledger and every conversation thread's Merkle chain), then the tables against
the signed checkpoints; exit non-zero naming the first row that breaks and every chain cut short
or rewritten since it was signed."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import ToolCall
from brainframe.services.council.votes import council_votes_verify
from brainframe.services.eventlog.reading import event_log_verify
from brainframe.services.ledger.ledgers import ledgers_verify
from broker.audit.checkpoints import checkpoints_verify
from broker.audit.keys import CheckpointKeyMissing
from broker.audit.verify import verify_chain
from broker.audit.witness import witness_read


class Command(BaseCommand):
    help = (
        "Verify the tamper-evident audit: every tool_calls chain row by row, the event log and "
        "the ledgers, and all of them against the signed checkpoints."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="verify only this agent's chain")
        parser.add_argument(
            "--workers",
            type=int,
            default=os.cpu_count() or 1,
            help="processes per long chain (default: one per CPU; 1 verifies in this process)",
        )
        parser.add_argument(
            "--witness",
            metavar="DIR",
            help="a directory witness's copies of the checkpoints, checked against the table",
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
            witnessed = witness_read(Path(options["witness"])) if options["witness"] else None
            try:
                signed = checkpoints_verify(witnessed=witnessed)
            except CheckpointKeyMissing as exc:
                signed = [f"checkpoints not verified: {exc}"]
            for other_problem in (
                *council_votes_verify(),
                *event_log_verify(),
                *ledgers_verify(),
                *signed,
            ):
                broken.append(other_problem)
                self.stderr.write(other_problem)
        rows = ToolCall.objects.filter(agent_id__in=agents).count()
        elapsed = time.monotonic() - started
        if broken:
            raise CommandError(f"audit verification FAILED: {len(broken)} problem(s)")
        self.stdout.write(
            self.style.SUCCESS(
                f"audit intact: {len(agents)} chain(s), {rows} row(s) verified in {elapsed:.2f}s"
            )
        )
