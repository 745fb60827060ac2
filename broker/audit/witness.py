"""Outside witnesses of the checkpoints: copies kept where a database writer cannot reach.

``RABS_CHECKPOINT_WITNESS`` lists them, each a URL:

- ``file:///path/dir``: one file per checkpoint, ``checkpoint-<seq>.json``, never overwritten (a
  directory on another host's share, or one an append-only backup takes);
- ``http://…`` / ``https://…``: a JSON POST of each checkpoint (a transparency log, a SIEM);
- ``syslog://host:port`` (UDP) or ``syslog:///dev/log``: one line per checkpoint.

A copy is ``{"body": …, "signature": …}``, the checkpoint's exact signed text. A witness that
cannot take one is logged and skipped: the checkpoint itself is written whatever a witness does.
``witness_read`` reads a directory witness back for ``verify_audit --witness``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

log = logging.getLogger(__name__)
#: syslog priority: facility local0, severity info.
_SYSLOG_PRI = 16 * 8 + 6


def _copy(checkpoint: Any) -> dict[str, str]:
    return {"body": checkpoint.body, "signature": checkpoint.signature}


def witnesses_send(checkpoint: Any, witnesses: list[str] | None = None) -> list[str]:
    """Hand ``checkpoint`` to every witness; returns what failed (each also logged)."""
    failed = []
    for url in settings.RABS_CHECKPOINT_WITNESS if witnesses is None else witnesses:
        try:
            _send(url, checkpoint)
        except Exception as exc:  # a witness down must not stop the next one, nor the job
            log.warning("checkpoint #%s not witnessed by %s: %s", checkpoint.seq, url, exc)
            failed.append(f"{url}: {exc}")
    return failed


def _send(url: str, checkpoint: Any) -> None:
    parts = urlsplit(url)
    copy = _copy(checkpoint)
    if parts.scheme == "file":
        _to_directory(Path(parts.path), checkpoint.seq, copy)
    elif parts.scheme in ("http", "https"):
        httpx.post(url, json=copy, timeout=5.0).raise_for_status()
    elif parts.scheme == "syslog":
        line = f"<{_SYSLOG_PRI}>rabs-checkpoint: {json.dumps(copy, separators=(',', ':'))}"
        if parts.hostname:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.sendto(line.encode(), (parts.hostname, parts.port or 514))
        else:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(line.encode(), parts.path or "/dev/log")
    else:
        raise ValueError(f"unknown witness {url!r} (file://, http(s):// or syslog://)")


def _to_directory(directory: Path, seq: int, copy: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"checkpoint-{seq:012d}.json"
    data = json.dumps(copy, sort_keys=True).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        if path.read_bytes() != data:
            # The table's checkpoint #seq is not the one witnessed: the later ones were deleted
            # and written again. The witness keeps the first; the verifier names the difference.
            raise ValueError(f"{path} holds another checkpoint #{seq}") from None
        return
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def witness_read(directory: Path) -> list[dict[str, str]]:
    """The checkpoints a directory witness holds, in seq order."""
    return [json.loads(path.read_text()) for path in sorted(directory.glob("checkpoint-*.json"))]
