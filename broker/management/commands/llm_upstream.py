"""Add or change an upstream of the model gateway, or list them."""

from __future__ import annotations

import os
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import LLMUpstream
from brainframe.services.llm.admission import llm_upstream_set


def _price(text: str | None) -> Decimal | None:
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise CommandError(f"{text!r} is not a price (USD per 1M tokens)") from None
    if value < 0:
        raise CommandError("prices are not negative")
    return value


class Command(BaseCommand):
    help = (
        "Configure the model gateway's upstreams: `add NAME --base-url URL --models m1,m2 "
        "[--api-key-env VAR] [--price-in USD_PER_1M --price-out USD_PER_1M] [--internal]` "
        "(again to change one), or `list`. The API key is read from an environment variable, "
        "never the command line, and stored encrypted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["add", "list"])
        parser.add_argument("name", nargs="?")
        parser.add_argument("--base-url")
        parser.add_argument("--models", help="comma-separated model names it serves")
        parser.add_argument("--api-key-env", default="")
        parser.add_argument("--price-in")
        parser.add_argument("--price-out")
        parser.add_argument(
            "--internal",
            action="store_true",
            help="inside the organisation: prompts are not redacted before they leave",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "list":
            for upstream in LLMUpstream.objects.all():
                where = "external" if upstream.external else "internal"
                self.stdout.write(
                    f"{upstream.name}\t{upstream.base_url}\t{','.join(upstream.served_models)}\t"
                    f"in {upstream.price_in} out {upstream.price_out} USD/1M\t{where}"
                )
            return
        if not options["name"] or not options["base_url"] or not options["models"]:
            raise CommandError("add needs NAME, --base-url and --models")
        api_key = None
        if options["api_key_env"]:
            api_key = os.environ.get(options["api_key_env"], "")
            if not api_key:
                raise CommandError(f"environment variable {options['api_key_env']} is unset")
        models = [m.strip() for m in options["models"].split(",") if m.strip()]
        try:
            upstream = llm_upstream_set(
                name=options["name"],
                base_url=options["base_url"],
                served_models=models,
                api_key=api_key,
                price_in=_price(options["price_in"]),
                price_out=_price(options["price_out"]),
                external=False if options["internal"] else None,
            )
        except ValidationError as exc:
            problems = (f"{field}: {' '.join(why)}" for field, why in exc.message_dict.items())
            raise CommandError("; ".join(problems)) from None
        self.stdout.write(f"{upstream.name}: {upstream.base_url} serves {', '.join(models)}")
