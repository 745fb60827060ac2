"""Give an agent model access through the gateway, with its limits (LiteLLM's names)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent, LLMBudget
from broker.management.limits import add_limit_options, apply_limit_options, limits_shown


class Command(BaseCommand):
    help = (
        "Set an agent's model access: `llm_budget AGENT [--max-budget USD --duration 1d] "
        "[--soft-budget USD] [--rpm N] [--tpm N] [--max-parallel N] [--models m1,m2] "
        "[--alias role=model]... [--suspend | --resume]`. Options left out keep their value; "
        "effective on the agent's next request."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")
        add_limit_options(parser)
        parser.add_argument("--models", help="comma-separated allowlist ('' for every model)")
        parser.add_argument("--alias", action="append", default=[], help="role=model")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = Agent.objects.filter(agent_id=options["agent_id"]).first()
        if agent is None:
            raise CommandError(f"no agent {options['agent_id']!r}")
        budget = LLMBudget.objects.filter(agent=agent).first() or LLMBudget(agent=agent)
        apply_limit_options(budget, options)
        if options["models"] is not None:
            budget.allowed_models = [m.strip() for m in options["models"].split(",") if m.strip()]
        for alias in options["alias"]:
            role, _, model = alias.partition("=")
            if not role or not model:
                raise CommandError(f"--alias {alias!r}: role=model")
            budget.aliases = {**budget.aliases, role.strip(): model.strip()}
        budget.save()
        shown = {
            "agent": agent.agent_id,
            **limits_shown(budget),
            "models": budget.allowed_models,
            "aliases": budget.aliases,
        }
        self.stdout.write(json.dumps(shown))
