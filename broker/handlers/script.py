"""``script`` handlers: a subprocess with no shell, a timeout, a minimal environment and a
working directory confined to ``RABS_SCRIPT_ROOT``. Arguments arrive as JSON on stdin; a JSON
document on stdout is the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from brainframe.models import Tool

from .base import HandlerFailure, HandlerTimeout


def _working_directory(relative: str) -> Path:
    root = Path(settings.RABS_SCRIPT_ROOT).resolve()
    cwd = (root / relative).resolve()
    if cwd != root and root not in cwd.parents:
        raise HandlerFailure(f"script: cwd {relative!r} escapes the script root")
    if not cwd.is_dir():
        raise HandlerFailure(f"script: no directory {relative!r} under the script root")
    return cwd


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    cwd = _working_directory(config.get("cwd", ""))
    # "python" means this interpreter, so scripts run the same Python as the broker.
    argv = [sys.executable if part == "python" else part for part in config["argv"]]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(cwd),
        "RABS_CALL_ID": str(call_id),
    }
    try:
        completed = subprocess.run(
            argv,
            input=json.dumps(arguments),
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=timeout,
            shell=False,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise HandlerTimeout(f"script did not finish within {timeout:g}s") from None
    except OSError as exc:
        raise HandlerFailure(f"script: {exc}") from None
    if completed.returncode != 0:
        raise HandlerFailure(
            f"script exited {completed.returncode}: {completed.stderr.strip()[-500:]}"
        )
    try:
        return json.loads(completed.stdout) if completed.stdout.strip() else {}
    except ValueError:
        return {"stdout": completed.stdout[-10000:]}
