"""Guardian over JSON lines: {id, text, trust} on stdin → {id, risk, action, patterns} on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand

from brainframe.safety.guardian import TRUST_MULTIPLIERS, assess


class Command(BaseCommand):
    help = (
        "Assess texts with the Guardian. Reads JSON lines {id, text, trust} (trust: "
        + ", ".join(TRUST_MULTIPLIERS)
        + "; default standard) and writes {id, risk, action, "
        "patterns}. A line that cannot be read is answered with {id?, error}."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for number, line in enumerate(sys.stdin, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                result = assess(str(item["text"]), item.get("trust") or "standard")
            except (ValueError, KeyError, TypeError) as exc:
                ident = item.get("id") if isinstance(locals().get("item"), dict) else None
                self.stdout.write(json.dumps({"id": ident, "line": number, "error": str(exc)}))
                continue
            self.stdout.write(
                json.dumps(
                    {
                        "id": item.get("id"),
                        "risk": result.risk,
                        "action": result.action,
                        "patterns": result.patterns,
                    }
                )
            )
