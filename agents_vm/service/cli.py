"""``python -m agents_vm call`` and ``tools``: one signed request to the broker from a shell.

For trying the broker, scripts and operators' checks; the agent service itself uses
``agents_vm.client.sdk`` directly. The agent and its secret come from the environment
(``RABS_AGENT_ID``, ``RABS_AGENT_SECRET``, ``RABS_BROKER_URL``) or the flags.

The answer is printed as one JSON object; the exit status says what happened (``EXIT``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

import httpx

from agents_vm.client.sdk import BrokerClient, BrokerError, Executed, Outcome, PendingApproval

#: Exit status by result (2 is argparse's: the command line itself was wrong).
EXIT = {
    "executed": 0,
    "failed": 1,  # it ran, and the handler failed or timed out
    "pending_approval": 3,
    "denied": 4,
    "rejected": 4,
    "expired": 4,
    "invalid": 5,
    "refused": 6,  # the broker refused the request itself (signature, size, rate, …)
    "unreachable": 7,
}


def add_parsers(sub: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--broker",
        default=os.environ.get("RABS_BROKER_URL", "http://127.0.0.1:8000"),
        help="the broker's URL (default: $RABS_BROKER_URL or http://127.0.0.1:8000)",
    )
    common.add_argument(
        "--agent",
        default=os.environ.get("RABS_AGENT_ID", ""),
        help="the agent's id (default: $RABS_AGENT_ID)",
    )
    common.add_argument(
        "--secret-file",
        help="a file holding the agent's secret (default: the secret in $RABS_AGENT_SECRET)",
    )
    call = sub.add_parser(
        "call", parents=[common], help="ask the broker for one tool call and print its answer"
    )
    call.add_argument("tool_id")
    call.add_argument("arguments", nargs="?", default="{}", help="a JSON object (default {})")
    call.add_argument("--reason", required=True, help="why: the call's R-Tag reason")
    call.add_argument("--confidence", type=float)
    call.add_argument("--task", dest="task_id", help="the task the call is part of")
    call.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if the call waits for a reviewer, wait up to this long for the decision",
    )
    sub.add_parser("tools", parents=[common], help="list the tools this agent may call")


def run(args: argparse.Namespace) -> int:
    if not args.agent:
        return _usage("no agent: give --agent or set RABS_AGENT_ID")
    try:
        secret = _secret(args.secret_file)
    except ValueError as exc:
        return _usage(str(exc))
    arguments: Any = None
    if args.command == "call":
        try:
            arguments = json.loads(args.arguments)
        except ValueError as exc:
            return _usage(f"arguments: not valid JSON ({exc})")
        if not isinstance(arguments, dict):
            return _usage("arguments: must be a JSON object")
    try:
        with BrokerClient(args.broker, agent_id=args.agent, secret=secret) as broker:
            if args.command == "tools":
                _print({"status": "ok", "tools": broker.tools()})
                return 0
            outcome = broker.call_tool(
                args.tool_id,
                arguments,
                reason=args.reason,
                confidence=args.confidence,
                task_id=args.task_id,
            )
            if isinstance(outcome, PendingApproval) and args.wait > 0:
                outcome = broker.wait(outcome, timeout=args.wait)
    except BrokerError as exc:
        _print({"status": "refused", "http_status": exc.status, **exc.body})
        return EXIT["refused"]
    except httpx.HTTPError as exc:
        _print({"status": "unreachable", "detail": f"{args.broker}: {exc}"})
        return EXIT["unreachable"]
    return _report(outcome)


def _report(outcome: Outcome) -> int:
    _print({"status": outcome.STATUS, **dataclasses.asdict(outcome)})
    if isinstance(outcome, Executed) and not outcome.ok:
        return EXIT["failed"]
    return EXIT[outcome.STATUS]


def _secret(path: str | None) -> str:
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                secret = handle.read().strip()
        except OSError as exc:
            raise ValueError(f"--secret-file: {exc.strerror}: {path}") from None
    else:
        secret = os.environ.get("RABS_AGENT_SECRET", "").strip()
    if not secret:
        raise ValueError(
            "no secret: set RABS_AGENT_SECRET (manage.py agent_key AGENT prints one) "
            "or give --secret-file"
        )
    return secret


def _print(body: dict[str, Any]) -> None:
    try:
        print(json.dumps(body, indent=2, ensure_ascii=False, default=str), flush=True)
    except BrokenPipeError:  # piped into head: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _usage(message: str) -> int:
    print(f"python -m agents_vm: {message}", file=sys.stderr)
    return 2
