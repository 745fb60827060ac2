"""Write finished tasks as fine-tuning examples (OpenAI chat format, JSONL), PII-filtered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.management.moments import since_moment
from brainframe.services.trust.trajectories import OUTCOMES, trajectories_export


class Command(BaseCommand):
    help = (
        "Export finished tasks as trajectories: the task, its plans, every tool call with its "
        "reason and answer, its result (JSONL, OpenAI fine-tuning chat format, PII-filtered)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--outcome", required=True, choices=sorted(OUTCOMES))
        parser.add_argument("--since", help="tasks finished from this date or time on")
        parser.add_argument("--agent", help="one agent's tasks only")
        parser.add_argument("--output", help="write to this file (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        since = since_moment(options["since"]) if options["since"] else None
        examples = trajectories_export(
            outcome=options["outcome"], since=since, agent_id=options["agent"]
        )
        count = 0
        if not options["output"]:
            for example in examples:
                self.stdout.write(json.dumps(example, ensure_ascii=False, default=str))
                count += 1
        else:  # a file appears whole or not at all
            target = Path(options["output"])
            partial = target.with_name(target.name + ".partial")
            with partial.open("w") as out:
                for example in examples:
                    out.write(json.dumps(example, ensure_ascii=False, default=str) + "\n")
                    count += 1
            partial.replace(target)
        self.stderr.write(f"exported {count} trajectory(ies)")
