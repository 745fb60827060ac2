"""Create or rotate an agent's request-signing secret and print it once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent
from brainframe.services.credentials import agent_credential_issue


class Command(BaseCommand):
    help = (
        "Issue a new signing secret for an agent, revoking its previous one. The secret is "
        "printed once and cannot be shown again; store it in the agent's VM configuration."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            agent = Agent.objects.get(agent_id=options["agent_id"])
        except Agent.DoesNotExist:
            known = ", ".join(Agent.objects.values_list("agent_id", flat=True)) or "none"
            raise CommandError(
                f"unknown agent {options['agent_id']!r} (known agents: {known})"
            ) from None
        secret = agent_credential_issue(agent=agent)
        self.stderr.write(
            f"New signing secret for {agent.agent_id}; any previous secret is revoked. "
            "It will not be shown again."
        )
        self.stdout.write(secret)
