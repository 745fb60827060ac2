"""Register an external A2A agent as a registry tool from its card (disabled until staff enable
it): ``manage.py a2a_agent acme https://agents.acme.example/.well-known/agent-card.json
--credential bearer=ACME_A2A_TOKEN``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from broker.services.a2a_agents import A2ARegistrationError, a2a_agent_register


class Command(BaseCommand):
    help = "Register (or refresh) an external A2A agent as the registry tool a2a.<name>."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the tool becomes a2a.<name>")
        parser.add_argument("card_url", help="the address of the agent's card")
        parser.add_argument(
            "--credential",
            action="append",
            default=[],
            metavar="SCHEME=ENV",
            help="the environment variable holding the credential for a security scheme of "
            "the card (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = {}
        for item in options["credential"]:
            scheme, sep, env = item.partition("=")
            if not sep or not scheme or not env:
                raise CommandError(f"--credential {item!r}: give SCHEME=ENV")
            names[scheme] = env
        try:
            tool = a2a_agent_register(
                name=options["name"], card_url=options["card_url"], credential_env=names
            )
        except A2ARegistrationError as exc:
            raise CommandError(str(exc)) from exc
        skills = ", ".join(s["id"] for s in tool.handler_config.get("skills", [])) or "none"
        self.stdout.write(
            f"{tool.tool_id}: skills {skills}; {'enabled' if tool.enabled else 'disabled'} "
            "(enable it and give agents access in the admin)"
        )
