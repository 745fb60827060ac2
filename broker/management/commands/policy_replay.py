"""What a draft V-Pol, directive, ACL policy or cap would have changed over recorded calls: the
real pipeline, dry-run (``broker.services.replay``; docs/access.md, "What-if")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.safety.policy.acl import AclDocumentError
from broker.errors import BrokerRefusal
from broker.services.replay import KINDS, policy_replay


def _days(text: str) -> int:
    match = re.fullmatch(r"(\d+)d?", text.strip())
    if match is None or int(match.group(1)) < 1:
        raise CommandError(f"--since takes days, e.g. 30d (not {text!r})")
    return int(match.group(1))


class Command(BaseCommand):
    help = "Replay recorded calls under a draft rule and print the decisions it would change."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", required=True, choices=KINDS)
        parser.add_argument(
            "--id",
            required=True,
            help="the V-Pol's id or name, the directive's code, the ACL policy's name, the agent",
        )
        parser.add_argument(
            "--draft",
            required=True,
            help="a file: the V-Pol's or directive's changed fields or the caps (JSON or YAML), "
            "or the ACL policy's YAML document",
        )
        parser.add_argument("--since", default="30d", help="how far back (default 30d)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["draft"])
        try:
            text = path.read_text()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from exc
        try:
            draft = text if options["kind"] == "acl" else yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CommandError(f"{path}: not JSON or YAML: {exc}") from exc
        try:
            report = policy_replay(
                kind=options["kind"],
                target=options["id"],
                draft=draft,
                days=_days(options["since"]),
            )
        except AclDocumentError as exc:
            raise CommandError(f"{path}: " + "; ".join(exc.lines())) from exc
        except BrokerRefusal as exc:
            raise CommandError(f"{exc.field}: {exc.detail}") from exc
        body = report.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(body, indent=2))
            return
        self.stdout.write(
            f"{body['calls']} recorded calls since {body['since'][:10]}; "
            f"{body['changed']} would be decided differently"
        )
        for transition, count in body["transitions"].items():
            self.stdout.write(f"  {count:6d}  {transition}")
        for call in body["affected"]:
            self.stdout.write(
                f"{call['at'][:19]}  {call['agent_id']:<10} {call['tool_id']:<32} "
                f"{call['was']} → {call['would']}  {call['link']}"
            )
