"""Write the tool-call audit out with every row's hashes, for systems outside the product."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.management.commands._moments import since_moment
from brainframe.models import ToolCall
from broker.audit.hashing import HASHED_FIELDS, OUTCOME_FIELDS, json_default

#: Everything the hashes cover, the hashes themselves, and the scheme that says how.
COLUMNS = (*HASHED_FIELDS, "hash_scheme", "face", "row_hash", "outcome_hash", *OUTCOME_FIELDS)


class Command(BaseCommand):
    help = (
        "Export the audit (tool_calls), each agent's chain in order, with every row's hash, "
        "previous hash and outcome hash, as NDJSON or CSV (cells are JSON). "
        "`python -m broker.verify_export FILE` checks a file without the database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="rows from this date or time on (ISO 8601)")
        parser.add_argument("--agent", help="one agent's chain only")
        parser.add_argument("--format", choices=["ndjson", "csv"], default="ndjson")
        parser.add_argument("--output", help="a file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = ToolCall.objects.all()
        if options["since"]:
            rows = rows.filter(timestamp__gte=since_moment(options["since"]))
        if options["agent"]:
            rows = rows.filter(agent_id=options["agent"])
        stream = rows.order_by("agent_id", "seq").values(*COLUMNS).iterator(chunk_size=2000)
        if options["output"]:
            with open(options["output"], "w", newline="", encoding="utf-8") as out:
                count = _write(stream, out, options["format"])
        else:
            count = _write(stream, sys.stdout, options["format"])
        self.stderr.write(f"exported {count} audit row(s)")


def _encoded(value: Any) -> str:
    return json.dumps(value, default=json_default, ensure_ascii=False, sort_keys=True)


def _write(stream: Any, out: Any, fmt: str) -> int:
    count = 0
    if fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(COLUMNS)
        for row in stream:
            writer.writerow([_encoded(row[c]) for c in COLUMNS])
            count += 1
        return count
    for row in stream:
        out.write(_encoded(row) + "\n")
        count += 1
    return count
