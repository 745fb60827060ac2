"""Give an agent model access through the gateway, with its limits (LiteLLM's names)."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent, LLMBudget
from brainframe.services.llm import duration_seconds


class Command(BaseCommand):
    help = (
        "Set an agent's model access: `llm_budget AGENT [--max-budget USD --duration 1d] "
        "[--soft-budget USD] [--rpm N] [--tpm N] [--max-parallel N] [--models m1,m2] "
        "[--alias role=model]... [--suspend | --resume]`. Options left out keep their value; "
        "effective on the agent's next request."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")
        parser.add_argument("--max-budget")
        parser.add_argument("--duration", help="the budget's period: Nh or Nd (default 30d)")
        parser.add_argument("--soft-budget")
        parser.add_argument("--rpm", type=int)
        parser.add_argument("--tpm", type=int)
        parser.add_argument("--max-parallel", type=int)
        parser.add_argument("--models", help="comma-separated allowlist ('' for every model)")
        parser.add_argument("--alias", action="append", default=[], help="role=model")
        parser.add_argument("--suspend", action="store_true")
        parser.add_argument("--resume", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = Agent.objects.filter(agent_id=options["agent_id"]).first()
        if agent is None:
            raise CommandError(f"no agent {options['agent_id']!r}")
        budget = LLMBudget.objects.filter(agent=agent).first() or LLMBudget(agent=agent)
        for name in ("max_budget", "soft_budget"):
            if options[name] is not None:
                try:
                    value = Decimal(options[name])
                except InvalidOperation:
                    raise CommandError(f"--{name.replace('_', '-')}: not a number") from None
                if value < 0:
                    raise CommandError(f"--{name.replace('_', '-')}: not negative")
                setattr(budget, name, value)
        if options["duration"] is not None:
            try:
                duration_seconds(options["duration"])
            except ValueError as exc:
                raise CommandError(f"--duration: {exc}") from None
            budget.budget_duration = options["duration"]
        for option, field in (("rpm", "rpm_limit"), ("tpm", "tpm_limit")):
            if options[option] is not None:
                if options[option] < 1:
                    raise CommandError(f"--{option}: at least 1")
                setattr(budget, field, options[option])
        if options["max_parallel"] is not None:
            if options["max_parallel"] < 1:
                raise CommandError("--max-parallel: at least 1")
            budget.max_parallel_requests = options["max_parallel"]
        if options["models"] is not None:
            budget.allowed_models = [m.strip() for m in options["models"].split(",") if m.strip()]
        for alias in options["alias"]:
            role, _, model = alias.partition("=")
            if not role or not model:
                raise CommandError(f"--alias {alias!r}: role=model")
            budget.aliases = {**budget.aliases, role.strip(): model.strip()}
        if options["suspend"] and options["resume"]:
            raise CommandError("--suspend or --resume, not both")
        if options["suspend"] or options["resume"]:
            budget.suspended = options["suspend"]
        budget.save()
        shown = {
            "agent": agent.agent_id,
            "rpm_limit": budget.rpm_limit,
            "tpm_limit": budget.tpm_limit,
            "max_parallel_requests": budget.max_parallel_requests,
            "max_budget": str(budget.max_budget) if budget.max_budget is not None else None,
            "budget_duration": budget.budget_duration,
            "soft_budget": str(budget.soft_budget) if budget.soft_budget is not None else None,
            "models": budget.allowed_models,
            "aliases": budget.aliases,
            "suspended": budget.suspended,
        }
        self.stdout.write(json.dumps(shown))
