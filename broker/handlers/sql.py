"""``sql`` handlers: one parameterised statement from ``handler_config``.

Values travel only as bound parameters (named ``%(name)s`` placeholders, the names listed in
``params``); the query text is never formatted. The statement runs on its own connection, in a
READ ONLY transaction unless the tool is a write or critical tool, with a statement timeout.
``RABS_SQL_HANDLER_DATABASE_URL`` may point at a role with only the grants these tools need.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from django.conf import settings
from psycopg.rows import dict_row

from brainframe.choices import RiskLevel
from brainframe.models import Tool

from .base import HandlerFailure, HandlerTimeout


def _conninfo() -> str:
    if settings.RABS_SQL_HANDLER_DATABASE_URL:
        return str(settings.RABS_SQL_HANDLER_DATABASE_URL)
    db = settings.DATABASES["default"]
    parts = {
        "dbname": db["NAME"],
        "user": db.get("USER") or "",
        "password": db.get("PASSWORD") or "",
        "host": db.get("HOST") or "",
        "port": str(db.get("PORT") or ""),
    }
    return " ".join(f"{k}='{v}'" for k, v in parts.items() if v)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    params = {name: arguments.get(name) for name in config.get("params", [])}
    read_only = tool.risk_level == RiskLevel.READ
    try:
        with psycopg.connect(_conninfo(), connect_timeout=max(1, int(timeout))) as conn:
            conn.read_only = read_only
            with conn.cursor(row_factory=dict_row) as cursor:
                cursor.execute(
                    "SELECT set_config('statement_timeout', %s, true)", [f"{int(timeout * 1000)}"]
                )
                cursor.execute(config["query"], params)
                rows = cursor.fetchall() if cursor.description else []
                affected = cursor.rowcount
    except psycopg.errors.QueryCanceled:
        raise HandlerTimeout(f"query exceeded {timeout:g}s") from None
    except psycopg.Error as exc:
        raise HandlerFailure(f"sql: {exc.diag.message_primary or exc}") from None
    return {
        "rows": [{k: _jsonable(v) for k, v in row.items()} for row in rows],
        "rowcount": affected,
    }
