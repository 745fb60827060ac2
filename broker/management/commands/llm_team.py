"""A team of agents sharing model limits and a budget through the gateway."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent, LLMTeam
from broker.management.limits import add_limit_options, apply_limit_options, limits_shown


class Command(BaseCommand):
    help = (
        "Create or change a team: `llm_team NAME [--agents a,b] [--models m1,m2] "
        "[--max-budget USD --duration 1d] "
        "[--soft-budget USD] [--rpm N] [--tpm N] [--max-parallel N] [--suspend | --resume]`. "
        "Each member's requests count against its own limits and its team's."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--agents", help="comma-separated agent ids (replaces the members)")
        parser.add_argument("--models", help="comma-separated allowlist ('' for every model)")
        add_limit_options(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        team = LLMTeam.objects.filter(name=options["name"]).first() or LLMTeam(name=options["name"])
        apply_limit_options(team, options)
        if options["models"] is not None:
            team.allowed_models = [m.strip() for m in options["models"].split(",") if m.strip()]
        members = None
        if options["agents"] is not None:
            wanted = [a.strip() for a in options["agents"].split(",") if a.strip()]
            members = list(Agent.objects.filter(agent_id__in=wanted))
            missing = sorted(set(wanted) - {a.agent_id for a in members})
            if missing:
                raise CommandError(f"no agent {', '.join(missing)}")
        team.full_clean(exclude=["agents"])
        team.save()
        if members is not None:
            team.agents.set(members)
        shown = {
            "team": team.name,
            "agents": sorted(team.agents.values_list("agent_id", flat=True)),
            "models": team.allowed_models,
            **limits_shown(team),
        }
        self.stdout.write(json.dumps(shown))
