"""The outbound PII filter over JSON lines.

{id, text} in → {id, text, entities: [{type, start, end}]} out.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand

from brainframe.safety.pii.filter import pii_redact


class Command(BaseCommand):
    help = (
        "Redact PII. Reads JSON lines {id, text}; writes {id, text (redacted), entities: "
        "[{type, start, end}]} with offsets into the original text."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for number, line in enumerate(sys.stdin, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                redacted, findings = pii_redact(str(item["text"]))
            except (ValueError, KeyError, TypeError) as exc:
                self.stdout.write(json.dumps({"line": number, "error": str(exc)}))
                continue
            self.stdout.write(
                json.dumps(
                    {
                        "id": item.get("id"),
                        "text": redacted,
                        "entities": [f.as_dict() for f in findings],
                    },
                    ensure_ascii=False,
                )
            )
