"""Register (or move) an agent's supervisor: its control URL and bearer token."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import Agent
from brainframe.services.work.supervisors import SupervisorError, supervisor_check, supervisor_set


class Command(BaseCommand):
    help = (
        "Record where an agent's supervisor answers (a loopback URL, e.g. http://127.0.0.1:8765) "
        "and its control token, read from an environment variable (never the command line); "
        "then ask it how it is. Without --token-env the stored token is kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent_id")
        parser.add_argument("--url", required=True, help="the supervisor's control URL")
        parser.add_argument(
            "--token-env", default="", help="environment variable holding the control token"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        agent = Agent.objects.filter(agent_id=options["agent_id"]).first()
        if agent is None:
            raise CommandError(f"no agent {options['agent_id']!r}")
        token = None
        if options["token_env"]:
            token = os.environ.get(options["token_env"], "")
            if not token:
                raise CommandError(f"environment variable {options['token_env']} is unset")
        try:
            supervisor = supervisor_set(agent=agent, control_url=options["url"], token=token)
        except SupervisorError as exc:
            raise CommandError(f"{exc.field or exc.code}: {exc.detail}") from None
        supervisor_check(supervisor=supervisor)
        state = "reachable" if supervisor.reachable else f"unreachable ({supervisor.error})"
        self.stdout.write(f"{agent.agent_id}: supervisor at {supervisor.control_url}, {state}")
