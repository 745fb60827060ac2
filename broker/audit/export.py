"""The audit written out for systems outside the product: every row with its hashes, the signed
checkpoints of its range, and a signed trailer (``python -m broker.verify_export`` checks it).

A line is an audit row, or a signed record ``{"record": "checkpoint" | "export", "body": …,
"signature": …}`` (in CSV, the last column ``record`` holds it, the others empty). The trailer,
last, signs what the file holds: its scope (``since``, ``agent``), the number of rows, each
chain's last row and the run of checkpoints; so a file cut short, or with its last checkpoints
removed, does not verify.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from django.utils import timezone

from brainframe.models import AuditCheckpoint, ToolCall

from .chains import AUDIT
from .hashing import HASHED_FIELDS, OUTCOME_FIELDS, json_default
from .keys import CheckpointKeyMissing, checkpoint_keyring
from .signing import body_text, sign

log = logging.getLogger(__name__)

#: Everything the hashes cover, the hashes themselves, and the scheme that says how.
COLUMNS = (*HASHED_FIELDS, "hash_scheme", "face", "row_hash", "outcome_hash", *OUTCOME_FIELDS)


@dataclass(frozen=True)
class Exported:
    rows: int
    checkpoints: int
    signed: bool


def _encoded(value: Any) -> str:
    return json.dumps(value, default=json_default, ensure_ascii=False, sort_keys=True)


def audit_export(
    out: TextIO, *, fmt: str = "ndjson", since: datetime | None = None, agent: str | None = None
) -> Exported:
    """Write the audit (``since`` a moment, one ``agent``'s chain) to ``out`` as ``fmt``."""
    rows = ToolCall.objects.all()
    checkpoints = AuditCheckpoint.objects.all()
    if since is not None:
        rows = rows.filter(timestamp__gte=since)
        checkpoints = checkpoints.filter(at__gte=since)
    if agent:
        rows = rows.filter(agent_id=agent)
    # The rows, then the checkpoints of the range, then the trailer that signs them all.
    records = list(checkpoints.order_by("seq").values_list("seq", "body", "signature"))
    stream = rows.order_by("agent_id", "seq").values(*COLUMNS).iterator(chunk_size=2000)
    writer = _Writer(out, fmt)
    heads: dict[str, dict[str, Any]] = {}
    count = 0
    for row in stream:
        writer.row(row)
        count += 1
        name = AUDIT + str(row["agent_id"])
        rows_before = heads.get(name, {}).get("rows", 0)
        heads[name] = {"seq": row["seq"], "hash": row["row_hash"], "rows": rows_before + 1}
    for _, text, signature in records:
        writer.record({"record": "checkpoint", "body": text, "signature": signature})
    try:
        ring = checkpoint_keyring()
    except CheckpointKeyMissing as exc:
        log.warning("the export is not signed: %s", exc)
        return Exported(count, len(records), signed=False)
    body = {
        "v": 1,
        "kind": "export",
        "at": timezone.now().isoformat(),
        "key": ring.key_id,
        "scope": {"since": since.isoformat() if since else None, "agent": agent or None},
        "rows": count,
        "heads": heads,
        "checkpoints": {
            "count": len(records),
            "first": records[0][0] if records else 0,
            "last": records[-1][0] if records else 0,
        },
    }
    text = body_text(body)
    writer.record({"record": "export", "body": text, "signature": sign(ring.private, text)})
    return Exported(count, len(records), signed=True)


class _Writer:
    def __init__(self, out: TextIO, fmt: str) -> None:
        self.out, self.fmt = out, fmt
        self.csv: Any = None
        if fmt == "csv":
            self.csv = csv.writer(out)
            self.csv.writerow([*COLUMNS, "record"])

    def row(self, row: dict[str, Any]) -> None:
        if self.csv is not None:
            self.csv.writerow([*(_encoded(row[c]) for c in COLUMNS), ""])
        else:
            self.out.write(_encoded(row) + "\n")

    def record(self, record: dict[str, Any]) -> None:
        if self.csv is not None:
            self.csv.writerow([*("" for _ in COLUMNS), _encoded(record)])
        else:
            self.out.write(_encoded(record) + "\n")
