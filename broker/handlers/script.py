"""``script`` handlers: a program run in the OS sandbox (``broker.handlers.sandbox``), no shell.

Arguments arrive as JSON on stdin; a JSON document on stdout is the result. The tool's directory
(``cwd`` under ``RABS_SCRIPT_ROOT``) is the script's read-only working directory, ``/tool``; it
writes in ``/workspace`` (``$RABS_WORKSPACE``), a private tmpfs that is gone after the call unless
``keep_outputs`` makes its files a deliverable of the calling agent.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from brainframe.models import Tool
from brainframe.services.work.deliverables import DeliverableRejected, deliverables_from_call

from .base import HandlerFailure, HandlerTimeout
from .sandbox import SandboxUnavailable, explain, limits_for, run_sandboxed

#: With ``keep_outputs``: runs the script, then answers one JSON envelope with its exit status,
#: its stdout and stderr, and the workspace's files (the script cannot write the envelope: its
#: stdout is this program's pipe). Standard library only, run by the sandbox's interpreter.
_KEEPER = """
import base64, json, os, subprocess, sys
done = subprocess.run(sys.argv[1:], stdin=sys.stdin, capture_output=True)
files, budget = {}, int(os.environ["RABS_KEEP_BYTES"])
for base, _, names in os.walk("/workspace"):
    for name in names:
        path = os.path.join(base, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as stream:
                data = stream.read(budget + 1)
            budget -= len(data)
            if budget < 0:
                sys.exit("outputs larger than the workspace limit")
            files[os.path.relpath(path, "/workspace")] = base64.b64encode(data).decode()
json.dump({"rc": done.returncode, "stdout": done.stdout.decode("utf-8", "replace"),
           "stderr": done.stderr.decode("utf-8", "replace")[-4000:], "files": files}, sys.stdout)
"""


def tool_directory(relative: str) -> Path:
    root = Path(settings.RABS_SCRIPT_ROOT).resolve()
    cwd = (root / relative).resolve()
    if cwd != root and root not in cwd.parents:
        raise HandlerFailure(f"script: cwd {relative!r} escapes the script root")
    if not cwd.is_dir():
        raise HandlerFailure(f"script: no directory {relative!r} under the script root")
    return cwd


def run(*, tool: Tool, arguments: dict[str, Any], call_id: uuid.UUID, timeout: float) -> Any:
    config = tool.handler_config
    tool_dir = tool_directory(config.get("cwd", ""))
    limits = limits_for(config)
    keep = bool(config.get("keep_outputs"))
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": "/workspace",
        "TMPDIR": "/workspace",
        "RABS_WORKSPACE": "/workspace",
        "RABS_CALL_ID": str(call_id),
    }
    command = list(config["argv"])
    if keep:
        env["RABS_KEEP_BYTES"] = str(limits["workspace_mb"] * 1024 * 1024)
        command = ["python", "-I", "-S", "-c", _KEEPER, *command]
    try:
        outcome = run_sandboxed(
            command=command,
            stdin=json.dumps(arguments).encode(),
            tool_dir=tool_dir,
            limits=limits,
            env=env,
            timeout=timeout,
            egress=config.get("egress"),
        )
    except SandboxUnavailable as exc:
        raise HandlerFailure(f"sandbox unavailable, script refused: {exc}") from None
    except OSError as exc:
        raise HandlerFailure(f"script: {exc}") from None
    if outcome.timed_out:
        raise HandlerTimeout(
            f"script did not finish within {timeout:g}s: killed with every process it started"
        )
    stdout, stderr, returncode = outcome.stdout, outcome.stderr, outcome.returncode
    files: dict[str, bytes] = {}
    if keep and returncode == 0:
        try:
            envelope = json.loads(stdout)
        except ValueError:
            raise HandlerFailure(f"script: {stderr.strip()[-500:] or 'no result'}") from None
        stdout, stderr, returncode = envelope["stdout"], envelope["stderr"], envelope["rc"]
        files = {name: base64.b64decode(data) for name, data in envelope["files"].items()}
    if returncode != 0:
        refused = "; ".join(outcome.egress_refused)
        raise HandlerFailure(
            explain(returncode, stderr, limits)
            + (f" [egress refused: {refused}]" if refused else "")
        )
    try:
        result = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        result = {"stdout": stdout[-10000:]}
    if files:
        result = _keep(result, files, call_id=call_id)
    return result


def _keep(result: Any, files: dict[str, bytes], *, call_id: uuid.UUID) -> Any:
    """Store the workspace's files as deliverables of the calling agent; name them in the result."""
    try:
        kept = deliverables_from_call(call_id=call_id, files=files)
    except DeliverableRejected as exc:
        raise HandlerFailure(f"script outputs not kept: {exc.detail}") from None
    if isinstance(result, dict):
        return {**result, "deliverables": kept}
    return {"result": result, "deliverables": kept}
