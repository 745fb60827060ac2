"""Issue an agent's credential and print it once: its request-signing secret (rotating the
previous one), or with ``--mcp`` a bearer token for the MCP face."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from brainframe.models import Agent
from brainframe.services.access.credentials import agent_credential_issue, agent_token_issue


class Command(BaseCommand):
    help = (
        "Issue a new signing secret for an agent, revoking its previous one; with --mcp, a new "
        "bearer token for the MCP face instead (earlier tokens stay valid until revoked in the "
        "admin or expired). The credential is printed once and cannot be shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")
        parser.add_argument(
            "--mcp", action="store_true", help="issue a bearer token for the MCP face"
        )
        parser.add_argument(
            "--expires-days",
            type=float,
            default=None,
            help="with --mcp: the token expires after this many days (default: never)",
        )
        parser.add_argument("--label", default="", help="with --mcp: what the token is for")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            agent = Agent.objects.get(agent_id=options["agent_id"])
        except Agent.DoesNotExist:
            known = ", ".join(Agent.objects.values_list("agent_id", flat=True)) or "none"
            raise CommandError(
                f"unknown agent {options['agent_id']!r} (known agents: {known})"
            ) from None
        days = options["expires_days"]
        if not options["mcp"]:
            if days is not None or options["label"]:
                raise CommandError("--expires-days and --label go with --mcp")
            secret = agent_credential_issue(agent=agent)
            self.stderr.write(
                f"New signing secret for {agent.agent_id}; any previous secret is revoked. "
                "It will not be shown again."
            )
            self.stdout.write(secret)
            return
        if days is not None and days <= 0:
            raise CommandError("--expires-days must be more than 0")
        expires = timezone.now() + timedelta(days=days) if days is not None else None
        token = agent_token_issue(agent=agent, label=options["label"], expires_at=expires)
        until = f"; it expires {timezone.localtime(expires):%Y-%m-%d %H:%M %Z}" if expires else ""
        self.stderr.write(
            f"New MCP token for {agent.agent_id}{until}. Send it as 'Authorization: Bearer "
            "<token>'; revoke it in the admin (Agent tokens). It will not be shown again."
        )
        self.stdout.write(token)
