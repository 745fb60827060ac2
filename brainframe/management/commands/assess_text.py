"""Guardian over JSON lines: {id, text, trust, source?, rights?} on stdin → {id, risk, action,
patterns} on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand

from brainframe.safety.guardian.core import TRUST_MULTIPLIERS, assess


class Command(BaseCommand):
    help = (
        "Assess texts with the Guardian. Reads JSON lines {id, text, trust} (trust: "
        + ", ".join(TRUST_MULTIPLIERS)
        + "; default standard), optionally source (tool_output, web_page, email…) and rights "
        "(the acts the sender may request: a list of payment, bank_details, payroll, forward, "
        "approve, skip_review, conceal) and writes {id, risk, action, patterns}. A line that "
        "cannot be read is answered with {id?, error}."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for number, line in enumerate(sys.stdin, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                rights = item.get("rights")
                if rights is not None and not (
                    isinstance(rights, list) and all(isinstance(r, str) for r in rights)
                ):
                    raise ValueError("rights must be a list of act names")
                source = item.get("source")
                result = assess(
                    str(item["text"]),
                    item.get("trust") or "standard",
                    source=str(source) if source is not None else None,
                    rights=rights,
                )
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
