"""The hot path of the MCP face: a plain ``tools/call`` of a registry tool answered without the
SDK's per-request transport.

A stateless Streamable HTTP request through the SDK builds a transport, memory streams, a task,
a JSON-RPC dispatcher and a server runner for each call, and validates the message and its
answer as models: about a tenth of a web process's busy time under load, as much as the
decision's own work in the process. A request that is exactly one JSON-RPC ``tools/call`` of
a registry tool, as agent frameworks send it (JSON accepted, no progress asked for, a protocol
version of the initialize handshake, nothing but ``name``, ``arguments`` and ``_meta``), is
answered here with the same decision and the same result (``server.registry_call``, serialized
as the SDK serializes it); anything else goes to the SDK. ``tests/broker/mcp/test_mcp_protocol.py``
checks that both paths answer alike.
"""

from __future__ import annotations

import json
import time
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from . import face
from .server import registry_call

_KEYS = frozenset({"name", "arguments", "_meta"})


def plain_call(
    message: Any, headers: dict[bytes, bytes]
) -> tuple[Any, str, dict[str, Any], dict[str, Any]] | None:
    """(id, name, arguments, _meta) of a request this path answers, else None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if (
        not params.keys() <= _KEYS
        or not isinstance(name, str)
        or not (arguments is None or isinstance(arguments, dict))
        or not (meta is None or isinstance(meta, dict))
        or (meta and "progressToken" in meta)
        or face.BUILTINS.resolve(name) is not None
    ):
        return None
    version = headers.get(b"mcp-protocol-version")
    if version is not None and version.decode("latin1") not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    accept = headers.get(b"accept", b"").decode("latin1").lower()
    types_ = {part.split(";")[0].strip() for part in accept.split(",")}
    if not types_ & {"application/json", "application/*", "*/*"}:
        return None
    content_type = headers.get(b"content-type", b"").decode("latin1").lower()
    if content_type.split(";")[0].strip() != "application/json":
        return None
    return request_id, name, dict(arguments or {}), dict(meta or {})


async def answer(
    send: Any,
    caller: face.Caller,
    call: tuple[Any, str, dict[str, Any], dict[str, Any]],
    session_id: str | None,
) -> None:
    """Decide the call and send its JSON-RPC answer (a result, or the error the SDK would send
    for an unknown tool)."""
    request_id, name, arguments, meta = call
    started = time.monotonic()
    try:
        result = await registry_call(
            caller, name, arguments, meta, started=started, session_id=session_id
        )
    except MCPError as error:
        body: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": error.error.code, "message": error.error.message},
        }
    else:
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped.pop("resultType", None)  # 2026-07-28's field: not on the handshake versions' wire
        body = {"jsonrpc": "2.0", "id": request_id, "result": dumped}
    payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
