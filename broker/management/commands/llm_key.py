"""Issue a virtual key for an agent's model requests through the gateway (/llm/v1)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent, LLMBudget
from brainframe.services.llm.admission import llm_key_issue


class Command(BaseCommand):
    help = (
        "Print a new virtual key for an agent's model requests (/llm/v1), once: it is stored as "
        "a hash. Earlier keys stay valid until revoked in the admin. The agent also needs model "
        "access (manage.py llm_budget)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = Agent.objects.filter(agent_id=options["agent_id"]).first()
        if agent is None:
            raise CommandError(f"no agent {options['agent_id']!r}")
        self.stdout.write(llm_key_issue(agent=agent))
        if not LLMBudget.objects.filter(agent=agent).exists():
            self.stderr.write(
                f"{agent.agent_id} has no model access yet: manage.py llm_budget {agent.agent_id}"
            )
