"""Signed checkpoints of the chains' heads (the model: Certificate Transparency's signed tree
heads): what makes a cut tail or a re-hashed history show.

A hash chain shows an edited row, but not a chain cut short, nor one re-hashed from the edited
row on by someone who can write the database. So every minute in which anything changed (and
when a worker shuts down) ``checkpoint_write`` signs the heads with the deployment's key
(``keys``) and appends them to ``audit_checkpoints``:

- ``heads``: every agent's audit chain, every event-log stream and the events ledger, in full
  (agents and streams are few), so the last checkpoint alone states every chain's length;
- ``threads``: the heads of the conversation threads with a turn sealed since the checkpoint
  before (threads are many: each is stated when it moves).

A head is carried into the next checkpoint only if the table still extends it: a chain now
shorter than its last signed head, or whose row at that seq changed, keeps the signed head (and
the job logs it), so a checkpoint never vouches for a rewritten history. Each body names the
previous body's digest; each checkpoint is also handed to the outside witnesses (``witness``).

``checkpoints_verify`` checks every checkpoint's signature and link, then the tables against
them: the row at each signed head must still be there with the same hash. With the chains'
own verification (each row links to the one before), that proves every row up to the head is as
it was when it was signed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from brainframe.models import AuditCheckpoint

from .chains import Head, chain_label, checkpoints_fold, heads_of
from .heads import chain_heads, live_at, thread_heads_sealed_since
from .keys import checkpoint_keyring
from .signing import GENESIS, body_digest, body_text, sign, signature_problem
from .witness import witnesses_send

log = logging.getLogger(__name__)

#: Threads whose turn was sealed this long before the last checkpoint are looked at again (a
#: turn's ``completed_at`` is set before its transaction commits).
THREAD_SLACK = timedelta(minutes=5)


@dataclass
class Written:
    checkpoint: AuditCheckpoint | None
    #: Chains whose table no longer extends their signed head (kept at the signed head).
    regressed: list[str] = field(default_factory=list)


def checkpoint_write(*, reason: str = "beat", force: bool = False) -> Written:
    """Sign and append a checkpoint when any head moved since the last one (or ``force``).
    Safe to run twice at once (an advisory lock orders them). Raises CheckpointKeyMissing
    without a key."""
    ring = checkpoint_keyring()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('audit_checkpoints', 0))")
        last = AuditCheckpoint.objects.order_by("-seq").first()
        baseline = _baseline(ring.trusted)
        signed = heads_of(json.loads(baseline.body), "heads") if baseline is not None else {}
        now = timezone.now()
        current = chain_heads()
        heads, regressed = _extended(signed, current)
        since = last.at - THREAD_SLACK if last is not None else None
        threads = {
            name: head
            for name, head in thread_heads_sealed_since(since).items()
            if last is None or head != _last_thread_head(name, last)
        }
        if not force and heads == signed and not threads:
            return Written(None, regressed)
        seq = (last.seq + 1) if last is not None else 1
        body: dict[str, Any] = {
            "v": 1,
            "kind": "checkpoint",
            "seq": seq,
            "at": now.isoformat(),
            "key": ring.key_id,
            "reason": reason,
            "prev": body_digest(last.body) if last is not None else GENESIS,
            "heads": {name: head.as_json() for name, head in sorted(heads.items())},
            "threads": {name: head.as_json() for name, head in sorted(threads.items())},
        }
        text = body_text(body)
        checkpoint = AuditCheckpoint.objects.create(
            seq=seq,
            at=now,
            key_id=ring.key_id,
            reason=reason[:16],
            body=text,
            signature=sign(ring.private, text),
        )
        transaction.on_commit(lambda: witnesses_send(checkpoint))
    return Written(checkpoint, regressed)


def _baseline(trusted: dict[str, Any], depth: int = 100) -> AuditCheckpoint | None:
    """The last checkpoint whose signature verifies: a row someone put in the table without the
    key is not what the next checkpoint is measured against (the verifier names it)."""
    for checkpoint in AuditCheckpoint.objects.order_by("-seq")[:depth]:
        problem = signature_problem(trusted, checkpoint.body, checkpoint.signature)
        if problem is None:
            return checkpoint
        log.error("checkpoint #%s: %s", checkpoint.seq, problem)
    return None


def _last_thread_head(name: str, last: AuditCheckpoint) -> Head | None:
    """The thread's head as the last checkpoint stated it, if it did (the common case of a
    thread stated again within the slack)."""
    stated = json.loads(last.body).get("threads", {}).get(name)
    return Head(int(stated["seq"]), str(stated["hash"])) if stated else None


def _extended(
    signed: dict[str, Head], current: dict[str, Head]
) -> tuple[dict[str, Head], list[str]]:
    """The heads to sign: the current ones, except where the table no longer extends the
    signed head (shorter, or a different row at its seq): that chain keeps its signed head."""
    heads = dict(current)
    moved = {name: head for name, head in signed.items() if current.get(name) != head}
    regressed: list[str] = []
    if moved:
        live = live_at({name: head.seq for name, head in moved.items()})
        for name, head in moved.items():
            now = live.get(name)
            if now is None or now.hash != head.hash:
                heads[name] = head
                regressed.append(name)
                log.error(
                    "%s no longer extends its signed head (seq %s): kept at the signed head",
                    chain_label(name),
                    head.seq,
                )
    return heads, regressed


def checkpoint_last() -> AuditCheckpoint | None:
    return AuditCheckpoint.objects.order_by("-seq").first()


def checkpoints_verify(*, witnessed: list[dict[str, str]] | None = None) -> list[str]:
    """The checkpoints, then the tables against them: at each chain's last signed head the table
    must hold the same row. Names a cut tail (the rows after seq N gone) or a rewritten history
    (a different hash at the signed seq). ``witnessed``: the copies an outside witness holds;
    one the table lacks, or holds otherwise, is named, and the witnessed one counts."""
    trusted = checkpoint_keyring().trusted
    table = {
        seq: (seq, text, signature)
        for seq, text, signature in AuditCheckpoint.objects.values_list(
            "seq", "body", "signature"
        ).iterator(chunk_size=500)
    }
    problems: list[str] = []
    for copy in witnessed or ():
        text, signature = copy.get("body", ""), copy.get("signature", "")
        problem = signature_problem(trusted, text, signature)
        seq = int(json.loads(text).get("seq", 0)) if not problem else 0
        if problem:
            problems.append(f"a witnessed checkpoint: {problem}")
        elif seq not in table:
            problems.append(f"checkpoint #{seq} is held by the witness, not by the table")
            table[seq] = (seq, text, signature)
        elif table[seq][1] != text:
            problems.append(
                f"checkpoint #{seq} in the table is not the one the witness holds "
                "(checkpoints were deleted and written again)"
            )
            table[seq] = (seq, text, signature)
    folded = checkpoints_fold((table[seq] for seq in sorted(table)), trusted)
    problems += folded.problems
    if not folded.heads:
        return problems
    live = live_at({name: head.seq for name, (head, _, _) in folded.heads.items()})
    for name, (head, seq, at) in sorted(folded.heads.items()):
        now = live.get(name)
        said = f"checkpoint #{seq} ({at:%Y-%m-%d %H:%M:%S} UTC) signed seq {head.seq}"
        if now is None or now.last == 0:
            problems.append(f"{chain_label(name)}: {said}, the table holds none of it (deleted)")
        elif now.last < head.seq:
            gone = head.seq - now.last
            problems.append(
                f"{chain_label(name)}: {said}, the table ends at seq {now.last}: "
                f"the last {gone} row(s) were deleted (a cut tail)"
            )
        elif now.hash != head.hash:
            what = "is missing" if now.hash is None else "has another hash"
            problems.append(
                f"{chain_label(name)}: {said}, the row there {what}: "
                "the chain was rewritten (re-hashed) since"
            )
    return problems


def checkpoint_age(now: datetime | None = None) -> timedelta | None:
    """How old the last checkpoint is (None: there is none)."""
    at = AuditCheckpoint.objects.order_by("-seq").values_list("at", flat=True).first()
    return None if at is None else (now or timezone.now()) - at


def checkpoints_overdue(*, max_age: timedelta, now: datetime | None = None) -> datetime | None:
    """The oldest event not under a checkpoint, when it is older than ``max_age`` (so the
    checkpoint job is not running, or cannot sign); else None. Every decision writes an event,
    so the event log stands for every chain here."""
    now = now or timezone.now()
    at = AuditCheckpoint.objects.order_by("-seq").values_list("at", flat=True).first()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT min(at) FROM event_log WHERE at > %s",
            [at or datetime(1970, 1, 1, tzinfo=now.tzinfo)],
        )
        oldest = cursor.fetchone()[0]
    if oldest is not None and now - oldest > max_age:
        return oldest
    return None
