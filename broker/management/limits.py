"""The limit options ``llm_budget`` and ``llm_team`` share (LiteLLM's names)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import CommandError, CommandParser

from brainframe.models import LLMBudget, LLMTeam
from brainframe.services.llm.admission import duration_seconds


def add_limit_options(parser: CommandParser) -> None:
    parser.add_argument("--max-budget")
    parser.add_argument("--duration", help="the budget's period: Nh or Nd (default 30d)")
    parser.add_argument("--soft-budget")
    parser.add_argument("--rpm", type=int)
    parser.add_argument("--tpm", type=int)
    parser.add_argument("--max-parallel", type=int)
    parser.add_argument("--suspend", action="store_true")
    parser.add_argument("--resume", action="store_true")


def apply_limit_options(limits: LLMBudget | LLMTeam, options: dict[str, Any]) -> None:
    """Set what the options give on ``limits``; options left out keep their value."""
    for name in ("max_budget", "soft_budget"):
        if options[name] is not None:
            try:
                value = Decimal(options[name])
            except InvalidOperation:
                raise CommandError(f"--{name.replace('_', '-')}: not a number") from None
            if value < 0:
                raise CommandError(f"--{name.replace('_', '-')}: not negative")
            setattr(limits, name, value)
    if options["duration"] is not None:
        try:
            duration_seconds(options["duration"])
        except ValueError as exc:
            raise CommandError(f"--duration: {exc}") from None
        limits.budget_duration = options["duration"]
    for option, field in (
        ("rpm", "rpm_limit"),
        ("tpm", "tpm_limit"),
        ("max_parallel", "max_parallel_requests"),
    ):
        if options[option] is not None:
            if options[option] < 1:
                raise CommandError(f"--{option.replace('_', '-')}: at least 1")
            setattr(limits, field, options[option])
    if options["suspend"] and options["resume"]:
        raise CommandError("--suspend or --resume, not both")
    if options["suspend"] or options["resume"]:
        limits.suspended = options["suspend"]


def limits_shown(limits: LLMBudget | LLMTeam) -> dict[str, Any]:
    return {
        "rpm_limit": limits.rpm_limit,
        "tpm_limit": limits.tpm_limit,
        "max_parallel_requests": limits.max_parallel_requests,
        "max_budget": str(limits.max_budget) if limits.max_budget is not None else None,
        "budget_duration": limits.budget_duration,
        "soft_budget": str(limits.soft_budget) if limits.soft_budget is not None else None,
        "suspended": limits.suspended,
    }
