"""The agent's private memory: ``agent_memory.db`` (SQLite), versioned, upgraded on open.

Tables:

- ``conversations``: the messages of each task's conversation with the model (a rolling
  window: ``prune`` drops what is older than the configured age);
- ``self``: the agent's journal, **encrypted at rest** with AES-256-GCM (a fresh nonce per
  entry, the table name as associated data): the file holds no plaintext of it;
- ``user_preferences``: what the agent has learned people prefer;
- ``task_state`` and ``calls``: where each task stands (its plan and finished steps) and every
  broker call made for it with its idempotency key and outcome, so a restarted worker resumes
  without calling twice;
- ``supervisor_events``: worker starts, exits and restarts, with why;
- ``handlers``: the agent's own handlers (seed 004 "Self-Managed Handlers", ``handlers.py``),
  stored once the governed ``agent.update_handler`` call executed; a worker reads them when it
  starts, so a change takes effect after a restart — asked for with ``agent.restart_self``;
- ``clarifications``: a question asked back to a person, by the thread their answer will come in
  on, and the task whose plan the answer resumes.

The schema version is SQLite's ``user_version``; ``MIGRATIONS[n]`` takes version n to n + 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MIGRATIONS: list[str] = [
    # 0 → 1: the three stores of the seed.
    """
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        message TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX conversations_task ON conversations (task_id, id);
    CREATE INDEX conversations_age ON conversations (created_at);
    CREATE TABLE "self" (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        created_at REAL NOT NULL,
        nonce BLOB NOT NULL,
        ciphertext BLOB NOT NULL
    );
    CREATE TABLE user_preferences (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 1 → 2: resumable work and the supervisor's record.
    """
    CREATE TABLE task_state (
        task_id TEXT PRIMARY KEY,
        plan TEXT,
        done_steps TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE TABLE calls (
        key TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        step_id TEXT,
        tool_id TEXT NOT NULL,
        call_id TEXT,
        status TEXT NOT NULL,
        outcome TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE supervisor_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        event TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    """,
    # 2 → 3: token usage per task survives a restart (cost is reported when the task ends).
    """
    ALTER TABLE task_state ADD COLUMN usage TEXT NOT NULL DEFAULT '{}';
    """,
    # 3 → 4: self-managed handler configurations.
    """
    CREATE TABLE handlers (
        name TEXT PRIMARY KEY,
        config TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 4 → 5: the control plane's turn (agents ledger) each task is written to.
    """
    ALTER TABLE task_state ADD COLUMN turn_id TEXT;
    """,
    # 5 → 6: questions asked back to a person (clarify), by the thread the answer comes in on.
    """
    CREATE TABLE clarifications (
        thread_id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        question TEXT NOT NULL,
        asked_at REAL NOT NULL
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
_AAD = b"rabs-agent:self:v1"


class JournalKeyError(Exception):
    """The journal cannot be read with this key."""


class AgentMemory:
    def __init__(self, path: Path, *, journal_key: bytes) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # One connection; the supervisor shares it between threads under its own lock.
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        os.chmod(path, 0o600)
        self._aead = AESGCM(journal_key)
        self.upgrade()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @property
    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def upgrade(self) -> int:
        """Apply the migrations this file has not had yet; returns the version reached."""
        current = self.version
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema {current}, newer than this agent's {SCHEMA_VERSION}"
            )
        for version in range(current, SCHEMA_VERSION):
            with self.transaction() as db:
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {version + 1}")
        return self.version

    # --- conversations ------------------------------------------------------------------------

    def append_message(self, task_id: str, message: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO conversations (task_id, message, created_at) VALUES (?, ?, ?)",
            (task_id, json.dumps(message), time.time()),
        )

    def messages(self, task_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT message FROM conversations WHERE task_id = ? ORDER BY id", (task_id,)
        )
        return [json.loads(r[0]) for r in rows]

    def prune(self, max_age_days: float) -> int:
        cutoff = time.time() - max_age_days * 86400
        return self.db.execute("DELETE FROM conversations WHERE created_at < ?", (cutoff,)).rowcount

    # --- the encrypted journal ----------------------------------------------------------------

    def journal_write(self, text: str) -> None:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, text.encode(), _AAD)
        self.db.execute(
            'INSERT INTO "self" (created_at, nonce, ciphertext) VALUES (?, ?, ?)',
            (time.time(), nonce, sealed),
        )

    def journal(self) -> list[str]:
        out = []
        for nonce, sealed in self.db.execute('SELECT nonce, ciphertext FROM "self" ORDER BY id'):
            try:
                out.append(self._aead.decrypt(nonce, sealed, _AAD).decode())
            except InvalidTag as exc:
                raise JournalKeyError("the journal does not open with this key") from exc
        return out

    # --- preferences --------------------------------------------------------------------------

    def preference_set(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO user_preferences (key, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (key, value, time.time()),
        )

    def preferences(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM user_preferences ORDER BY key"))

    # --- self-managed handlers -----------------------------------------------------------------

    def handler_set(self, name: str, config: dict[str, Any]) -> None:
        if not name or not isinstance(config, dict):
            raise ValueError("a handler configuration is a name and a JSON object")
        self.db.execute(
            "INSERT INTO handlers (name, config, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET config = excluded.config, "
            "updated_at = excluded.updated_at",
            (name, json.dumps(config, sort_keys=True), time.time()),
        )

    def handlers(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT name, config FROM handlers ORDER BY name")
        return {name: json.loads(config) for name, config in rows}

    def handlers_digest(self) -> str:
        """Names the configurations as they stand (the supervisor shows the running worker's)."""
        text = json.dumps(self.handlers(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    # --- resumable work -----------------------------------------------------------------------

    def task_state(self, task_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT plan, done_steps, status FROM task_state WHERE task_id = ?", (task_id,)
        ).fetchone()
        if row is None:
            return None
        return {
            "plan": json.loads(row[0]) if row[0] else None,
            "done_steps": json.loads(row[1]),
            "status": row[2],
        }

    def task_state_save(
        self,
        task_id: str,
        *,
        status: str,
        plan: dict[str, Any] | None = None,
        done_steps: list[str] | None = None,
    ) -> None:
        current = self.task_state(task_id) or {"plan": None, "done_steps": []}
        self.db.execute(
            "INSERT INTO task_state (task_id, plan, done_steps, status, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET plan = excluded.plan, "
            "done_steps = excluded.done_steps, status = excluded.status, "
            "updated_at = excluded.updated_at",
            (
                task_id,
                json.dumps(plan if plan is not None else current["plan"]),
                json.dumps(done_steps if done_steps is not None else current["done_steps"]),
                status,
                time.time(),
            ),
        )

    def turn_get(self, task_id: str) -> str | None:
        """The ledger turn this task's work is recorded in (None: not started yet)."""
        row = self.db.execute(
            "SELECT turn_id FROM task_state WHERE task_id = ?", (task_id,)
        ).fetchone()
        return row[0] if row and row[0] else None

    def turn_set(self, task_id: str, turn_id: str) -> None:
        self.db.execute(
            "INSERT INTO task_state (task_id, status, updated_at, turn_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (task_id) DO UPDATE SET turn_id = excluded.turn_id",
            (task_id, "in_progress", time.time(), turn_id),
        )

    def usage_add(
        self, task_id: str, *, model: str, prompt: int, completion: int
    ) -> dict[str, Any]:
        """Add one model call's tokens to the task's running total; returns the total."""
        row = self.db.execute(
            "SELECT usage FROM task_state WHERE task_id = ?", (task_id,)
        ).fetchone()
        usage = json.loads(row[0]) if row else {}
        usage = {
            "model": model,
            "prompt_tokens": usage.get("prompt_tokens", 0) + prompt,
            "completion_tokens": usage.get("completion_tokens", 0) + completion,
            "model_calls": usage.get("model_calls", 0) + 1,
        }
        if row is None:
            self.task_state_save(task_id, status="in_progress")
        self.db.execute(
            "UPDATE task_state SET usage = ? WHERE task_id = ?", (json.dumps(usage), task_id)
        )
        return usage

    def usage(self, task_id: str) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT usage FROM task_state WHERE task_id = ?", (task_id,)
        ).fetchone()
        return json.loads(row[0]) if row else {}

    def call_get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT call_id, status, outcome FROM calls WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return {"call_id": row[0], "status": row[1], "outcome": json.loads(row[2])}

    def call_save(
        self,
        key: str,
        *,
        task_id: str,
        step_id: str | None,
        tool_id: str,
        call_id: str | None,
        status: str,
        outcome: dict[str, Any],
    ) -> None:
        self.db.execute(
            "INSERT INTO calls (key, task_id, step_id, tool_id, call_id, status, outcome, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
            "call_id = excluded.call_id, status = excluded.status, outcome = excluded.outcome",
            (key, task_id, step_id, tool_id, call_id, status, json.dumps(outcome), time.time()),
        )

    def calls(self, task_id: str) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT key, step_id, tool_id, call_id, status FROM calls WHERE task_id = ? "
            "ORDER BY created_at",
            (task_id,),
        )
        return [
            {"key": r[0], "step_id": r[1], "tool_id": r[2], "call_id": r[3], "status": r[4]}
            for r in rows
        ]

    def recent_calls(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest broker calls of any task (the dashboard's list)."""
        rows = self.db.execute(
            "SELECT task_id, step_id, tool_id, call_id, status, created_at FROM calls "
            "WHERE call_id IS NOT NULL OR status = 'sent' ORDER BY created_at DESC LIMIT ?",
            (limit,),
        )
        keys = ("task_id", "step_id", "tool_id", "call_id", "status", "at")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def current_task(self) -> dict[str, Any] | None:
        """The task the worker is on (the latest one in progress), with its turn."""
        row = self.db.execute(
            "SELECT task_id, status, turn_id, done_steps, plan, updated_at FROM task_state "
            "WHERE status = 'in_progress' ORDER BY updated_at DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        plan = json.loads(row[4]) if row[4] else None
        return {
            "task_id": row[0],
            "status": row[1],
            "turn_id": row[2],
            "done_steps": json.loads(row[3]),
            "goal": plan.get("goal") if isinstance(plan, dict) else None,
            "updated_at": row[5],
        }

    # --- questions asked back (clarify) -------------------------------------------------------

    def clarification_park(self, thread_id: str, task_id: str, question: str) -> None:
        self.db.execute(
            "INSERT INTO clarifications (thread_id, task_id, question, asked_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET task_id = excluded.task_id,"
            " question = excluded.question, asked_at = excluded.asked_at",
            (thread_id, task_id, question, time.time()),
        )

    def clarification_take(self, thread_id: str) -> dict[str, Any] | None:
        """The question waiting for an answer on ``thread_id`` (taken: asked once, resumed once)."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT task_id, question, asked_at FROM clarifications WHERE thread_id = ?",
                (thread_id,),
            ).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM clarifications WHERE thread_id = ?", (thread_id,))
        return {"task_id": row[0], "question": row[1], "asked_at": row[2]}

    def clarification_peek(self, thread_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT task_id, question FROM clarifications WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return {"task_id": row[0], "question": row[1]} if row else None

    # --- the supervisor's record --------------------------------------------------------------

    def event(self, event: str, detail: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO supervisor_events (at, event, detail) VALUES (?, ?, ?)",
            (time.time(), event, json.dumps(detail)),
        )

    def events(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT at, event, detail FROM supervisor_events ORDER BY id")
        return [{"at": r[0], "event": r[1], **json.loads(r[2])} for r in rows]
