"""Write the tool-call audit out with every row's hashes, the checkpoints of its range and a
signed trailer, for systems outside the product (``broker.audit.export``)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.management.moments import since_moment
from broker.audit.export import audit_export


class Command(BaseCommand):
    help = (
        "Export the audit (tool_calls), each agent's chain in order, with every row's hash, "
        "previous hash and outcome hash, as NDJSON or CSV (cells are JSON), then the signed "
        "checkpoints of its range and a signed trailer. "
        "`python -m broker.verify_export FILE --public-key KEYS.pem` checks a file without the "
        "database (`manage.py checkpoint_key` prints the keys)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="rows from this date or time on (ISO 8601)")
        parser.add_argument("--agent", help="one agent's chain only")
        parser.add_argument("--format", choices=["ndjson", "csv"], default="ndjson")
        parser.add_argument("--output", help="a file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        since = since_moment(options["since"]) if options["since"] else None
        kwargs = {"fmt": options["format"], "since": since, "agent": options["agent"]}
        if options["output"]:
            with open(options["output"], "w", newline="", encoding="utf-8") as out:
                done = audit_export(out, **kwargs)
        else:
            done = audit_export(sys.stdout, **kwargs)
        signed = "signed" if done.signed else "NOT signed (no checkpoint key)"
        self.stderr.write(
            f"exported {done.rows} audit row(s) and {done.checkpoints} checkpoint(s), {signed}"
        )
