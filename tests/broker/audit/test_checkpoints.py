"""Signed checkpoints: what someone who can write the database, or edit an export, could do to
the history, and how `verify_audit` and `python -m broker.verify_export` name it.

The attacks are made as such an insider would: with the database's triggers off (superuser), a
re-hashed chain consistent row by row, a checkpoint signed with a key of their own."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import CommandError, call_command
from django.db import connection

from brainframe.models import AuditCheckpoint, EventLogEntry, ToolCall
from broker.audit.checkpoints import checkpoint_write
from broker.audit.hashing import (
    CONTENT_FIELDS,
    compute_content_hash,
    compute_outcome_hash,
    compute_row_hash,
)
from broker.audit.keys import checkpoint_keyring
from broker.audit.signing import body_text, key_id, sign
from tests.signing import SignedClient

pytestmark = pytest.mark.django_db
CALLS = "/api/v1/tool-calls/"
ROOT = Path(__file__).resolve().parents[3]
READ = {
    "tool_id": "roster.shift.read",
    "reason": "check",
    "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
}


@pytest.fixture
def history(henry: SignedClient, reggie: SignedClient) -> None:
    for _ in range(4):
        henry.post(CALLS, READ)
    reggie.post(CALLS, READ)
    henry.post(CALLS, {"tool_id": "hr.kpi.update", "reason": "x", "arguments": {}})


@pytest.fixture
def keys(settings: Any, tmp_path: Path) -> Path:
    """A key of this test's own; the public keys, as `manage.py checkpoint_key` prints them."""
    settings.RABS_CHECKPOINT_KEY_FILE = tmp_path / "key.pem"
    settings.RABS_CHECKPOINT_KEYS_DIR = tmp_path / "retired"
    out = StringIO()
    call_command("checkpoint_key", stdout=out)
    path = tmp_path / "public.pem"
    path.write_text(out.getvalue())
    return path


def _tamper(sql: str, params: list[Any]) -> None:
    """As a database superuser could: triggers off."""
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        cursor.execute(sql, params)
        cursor.execute("SET session_replication_role = DEFAULT")


def _verify_audit(*args: str) -> str:
    """What `verify_audit` says on stderr (empty when intact)."""
    err = StringIO()
    try:
        call_command("verify_audit", "--workers", "1", *args, stdout=StringIO(), stderr=err)
    except CommandError:
        assert err.getvalue(), "failed without naming a problem"
        return err.getvalue()
    return ""


def test_a_checkpoint_signs_every_chain_head_when_something_changed(
    history: None, keys: Path, henry: SignedClient
) -> None:
    first = checkpoint_write().checkpoint
    assert first is not None and first.seq == 1
    body = json.loads(first.body)
    henry_last = ToolCall.objects.filter(agent_id="henry").order_by("-seq").first()
    assert henry_last is not None
    assert body["heads"]["audit:henry"] == {
        "seq": henry_last.seq,
        "hash": henry_last.row_hash,
        "count": henry_last.seq,
    }
    assert "audit:reggie" in body["heads"] and "events:henry" in body["heads"]
    assert body["key"] == key_id(checkpoint_keyring().private.public_key())
    assert checkpoint_write().checkpoint is None  # nothing moved: nothing written
    henry.post(CALLS, READ)
    second = checkpoint_write().checkpoint
    assert second is not None and second.seq == 2
    assert json.loads(second.body)["heads"]["audit:henry"]["seq"] == henry_last.seq + 1
    assert _verify_audit() == ""


def test_the_last_rows_of_an_agents_audit_deleted_are_named(history: None, keys: Path) -> None:
    checkpoint_write()
    last = ToolCall.objects.filter(agent_id="henry").order_by("-seq")[:2]
    _tamper("DELETE FROM tool_calls WHERE id = ANY(%s)", [[c.id for c in last]])
    said = _verify_audit()
    top = last[0].seq
    assert "audit chain of agent henry: checkpoint #1" in said, said
    assert f"signed seq {top}, the table ends at seq {top - 2}" in said
    assert "the last 2 row(s) were deleted (a cut tail)" in said
    # The next checkpoint does not vouch for the shorter chain: it keeps the signed head.
    written = checkpoint_write(force=True)
    assert written.regressed == ["audit:henry"]
    assert json.loads(written.checkpoint.body)["heads"]["audit:henry"]["seq"] == top  # type: ignore[union-attr]
    assert "a cut tail" in _verify_audit()


def test_the_last_events_of_a_stream_deleted_are_named(history: None, keys: Path) -> None:
    checkpoint_write()
    last = EventLogEntry.objects.filter(stream="henry").order_by("-seq")[:3]
    top = last[0].seq
    _tamper("DELETE FROM event_log WHERE id = ANY(%s)", [[e.id for e in last]])
    said = _verify_audit()
    assert "event log stream henry: checkpoint #1" in said, said
    assert f"the table ends at seq {top - 3}: the last 3 row(s) were deleted" in said


def test_the_last_events_of_the_events_ledger_deleted_are_named(keys: Path) -> None:
    from django.db import transaction

    from brainframe.services.ledger.ledgers import ledger_event_append

    with transaction.atomic():
        for number in range(4):
            ledger_event_append(
                kind="message", channel="sms", adapter="test", external_id=f"m{number}", text="hi"
            )
    checkpoint_write()
    _tamper("DELETE FROM events_ledger WHERE seq = 4", [])
    said = _verify_audit()
    assert "events ledger: checkpoint #1" in said, said
    assert "the table ends at seq 3: the last 1 row(s) were deleted (a cut tail)" in said


def _rehash(agent: str, from_seq: int, edit: dict[str, Any]) -> None:
    """Edit a row and re-hash the chain from it on, as someone who knows the scheme would: every
    row's own hashes consistent, so the chain alone verifies."""
    rows = list(ToolCall.objects.filter(agent_id=agent, seq__gte=from_seq).order_by("seq"))
    prev = rows[0].prev_hash
    for number, call in enumerate(rows):
        values = {f: getattr(call, f) for f in CONTENT_FIELDS}
        values.update({"seq": call.seq, "prev_hash": prev, "hash_scheme": call.hash_scheme})
        if number == 0:
            values.update(edit)
        row_hash = compute_row_hash(values)
        outcome = None
        if call.outcome_hash:
            outcome_values = {
                f: getattr(call, f)
                for f in (
                    "outcome",
                    "output",
                    "error",
                    "duration_ms",
                    "executed_at",
                    "executed_arguments",
                    "outbound_findings",
                )
            }
            outcome = compute_outcome_hash(compute_content_hash(values), outcome_values)
        _tamper(
            "UPDATE tool_calls SET input = %s, prev_hash = %s, row_hash = %s,"
            " outcome_hash = coalesce(%s, outcome_hash) WHERE id = %s",
            [json.dumps(values["input"]), prev, row_hash, outcome, call.id],
        )
        prev = row_hash


def test_a_chain_re_hashed_in_the_database_is_named(history: None, keys: Path) -> None:
    checkpoint_write()
    first = ToolCall.objects.filter(agent_id="henry").order_by("seq").first()
    assert first is not None
    _rehash("henry", first.seq, {"input": {"date_from": "2026-03-09", "date_to": "2026-03-09"}})
    from broker.audit.verify import verify_chain

    assert verify_chain("henry") is None  # consistent row by row: the chain alone cannot tell
    said = _verify_audit()
    assert "audit chain of agent henry: checkpoint #1" in said, said
    assert "has another hash: the chain was rewritten (re-hashed) since" in said


def test_a_checkpoint_forged_with_another_key_is_named(history: None, keys: Path) -> None:
    real = checkpoint_write().checkpoint
    assert real is not None
    body = json.loads(real.body)
    other = Ed25519PrivateKey.generate()
    forged = {**body, "seq": 2, "key": key_id(other.public_key()), "heads": {}}
    text = body_text(forged)
    AuditCheckpoint.objects.create(
        seq=2,
        at=real.at,
        key_id=forged["key"],
        reason="beat",
        body=text,
        signature=sign(other, text),
    )
    # The right key's name on a body it did not sign.
    altered = body_text({**body, "seq": 3, "reason": "manual"})
    AuditCheckpoint.objects.create(
        seq=3, at=real.at, key_id=body["key"], reason="beat", body=altered, signature=real.signature
    )
    said = _verify_audit()
    assert f"checkpoint #2: signed with key {forged['key']}, which is not among the trusted" in said
    assert "checkpoint #3: the signature does not verify with key" in said, said


def test_rotation_keeps_what_the_old_key_signed_verifiable(
    history: None, keys: Path, henry: SignedClient, settings: Any
) -> None:
    assert oct(settings.RABS_CHECKPOINT_KEY_FILE.stat().st_mode & 0o777) == "0o600"
    old = checkpoint_write().checkpoint
    out, err = StringIO(), StringIO()
    call_command("checkpoint_key", "--rotate", stdout=out, stderr=err)
    assert out.getvalue().count("BEGIN PUBLIC KEY") == 2 and "retired" in err.getvalue()
    henry.post(CALLS, READ)
    new = checkpoint_write().checkpoint
    assert old is not None and new is not None and new.key_id != old.key_id
    assert _verify_audit() == ""


# --- the export --------------------------------------------------------------------------------

#: The verifier in an interpreter of its own where Django cannot even be imported.
_NO_DJANGO = (
    "import runpy, sys; sys.modules['django'] = None; "
    "sys.argv = ['verify_export', *sys.argv[1:]]; "
    "runpy.run_module('broker.verify_export', run_name='__main__')"
)


def _verify_file(path: Path, *keys: Path) -> tuple[int, str]:
    given = [arg for key in keys for arg in ("--public-key", str(key))]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    done = subprocess.run(
        [sys.executable, "-c", _NO_DJANGO, str(path), *given],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def exported(history: None, keys: Path, henry: SignedClient, tmp_path: Path) -> Path:
    checkpoint_write()
    henry.post(CALLS, READ)  # a row after the last checkpoint: only the trailer covers it
    path = tmp_path / "audit.ndjson"
    call_command("export_audit", "--output", str(path), stderr=StringIO())
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_an_intact_export_verifies_without_django(exported: Path, keys: Path) -> None:
    code, said = _verify_file(exported, keys)
    rows = ToolCall.objects.count()
    assert code == 0, said
    assert f"intact ({rows} rows, 1 checkpoint(s) and the trailer verified)" in said
    code, said = _verify_file(exported)  # without the keys: the rows only, and it says so
    assert code == 0 and "signatures not checked" in said


def test_an_export_with_its_tail_cut_is_refused(exported: Path, keys: Path) -> None:
    lines = _lines(exported)
    henry = [i for i, line in enumerate(lines) if line.get("agent_id") == "henry"]
    # The last two of henry's rows gone, the records kept.
    _write(exported, [line for i, line in enumerate(lines) if i not in henry[-2:]])
    code, said = _verify_file(exported, keys)
    assert code == 1 and "a cut tail" in said, said
    assert "audit:henry: the trailer signed rows to seq" in said
    assert "checkpoint #1" in said and "row(s) cut" in said
    # And with the trailer cut off too.
    _write(exported, [line for i, line in enumerate(lines) if i not in henry[-2:]][:-1])
    code, said = _verify_file(exported, keys)
    assert code == 1 and "no signed trailer: it may have been cut" in said, said


def test_an_export_re_hashed_from_an_edited_row_on_is_refused(exported: Path, keys: Path) -> None:
    lines = _lines(exported)
    rows = [line for line in lines if line.get("agent_id") == "henry"]
    prev = rows[0]["prev_hash"]
    for number, row in enumerate(rows):
        if number == 0:
            row["input"] = {"date_from": "2026-03-09", "date_to": "2026-03-09"}
        row["prev_hash"] = prev
        row["row_hash"] = compute_row_hash(row)
        if row.get("outcome_hash"):
            row["outcome_hash"] = compute_outcome_hash(compute_content_hash(row), row)
        prev = row["row_hash"]
    _write(exported, lines)
    code, said = _verify_file(exported)
    assert code == 0, said  # consistent row by row: without the keys it passes
    code, said = _verify_file(exported, keys)
    assert code == 1, said
    assert "does not match the trailer's signed hash (re-hashed)" in said
    assert "does not match the hash checkpoint #1" in said


def test_an_export_with_a_forged_checkpoint_is_refused(exported: Path, keys: Path) -> None:
    lines = _lines(exported)
    at = next(i for i, line in enumerate(lines) if line.get("record") == "checkpoint")
    body = json.loads(lines[at]["body"])
    other = Ed25519PrivateKey.generate()
    forged = body_text({**body, "key": key_id(other.public_key())})
    lines[at] = {"record": "checkpoint", "body": forged, "signature": sign(other, forged)}
    _write(exported, lines)
    code, said = _verify_file(exported, keys)
    assert code == 1 and "checkpoint #1: signed with key" in said, said


# --- witnesses, the check, the shutdown ---------------------------------------------------------


@pytest.fixture
def http_witness() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Witness(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Witness)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/checkpoints", received
    finally:
        server.shutdown()


def test_witnesses_keep_copies_and_a_deleted_checkpoint_is_named(
    history: None,
    keys: Path,
    henry: SignedClient,
    settings: Any,
    tmp_path: Path,
    http_witness: tuple[str, list[dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url, received = http_witness
    syslog = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    syslog.bind(("127.0.0.1", 0))
    syslog.settimeout(10)
    settings.RABS_CHECKPOINT_WITNESS = [
        f"file://{tmp_path / 'witness'}",
        url,
        f"syslog://127.0.0.1:{syslog.getsockname()[1]}",
    ]
    with django_capture_on_commit_callbacks(execute=True):  # handed over once committed
        first = checkpoint_write().checkpoint
    henry.post(CALLS, READ)
    with django_capture_on_commit_callbacks(execute=True):
        second = checkpoint_write().checkpoint
    assert first is not None and second is not None
    files = sorted((tmp_path / "witness").glob("checkpoint-*.json"))
    assert [json.loads(p.read_text())["body"] for p in files] == [first.body, second.body]
    assert [copy["signature"] for copy in received] == [first.signature, second.signature]
    line = syslog.recv(65536).decode()
    syslog.close()
    assert line.startswith("<134>rabs-checkpoint: ") and first.signature in line
    # Whoever deletes the last checkpoint (and cuts the chain back to the one before) is named
    # by the witness's copy.
    _tamper("DELETE FROM audit_checkpoints WHERE seq = 2", [])
    last = ToolCall.objects.filter(agent_id="henry").order_by("-seq").first()
    assert last is not None
    _tamper("DELETE FROM tool_calls WHERE id = %s", [last.id])
    assert "a cut tail" not in _verify_audit()  # the table's checkpoints alone: none covers it
    said = _verify_audit("--witness", str(tmp_path / "witness"))
    assert "checkpoint #2 is held by the witness, not by the table" in said, said
    assert "audit chain of agent henry: checkpoint #2" in said and "a cut tail" in said


def test_check_warns_when_events_wait_too_long_for_a_checkpoint(
    history: None, keys: Path, settings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings.RABS_CHECKPOINT_MAX_AGE_MINUTES = -1  # every event is overdue at once
    call_command("check")
    printed = capsys.readouterr()
    assert "broker.W002" in printed.out + printed.err
    checkpoint_write()
    call_command("check")
    printed = capsys.readouterr()
    assert "broker.W002" not in printed.out + printed.err


def test_a_worker_shutting_down_writes_a_checkpoint(history: None, keys: Path) -> None:
    from rabs.celery import _checkpoint_at_shutdown

    _checkpoint_at_shutdown()
    last = AuditCheckpoint.objects.get()
    assert last.reason == "shutdown" and json.loads(last.body)["heads"]
