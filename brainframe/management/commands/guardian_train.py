"""Rebuild the Guardian's learned stage from the training data (deterministic)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.safety.learned import MODEL_PATH, fit, model_read, model_write, training_rows


class Command(BaseCommand):
    help = (
        "Train the Guardian's learned stage on eval/corpora's training data and write "
        "brainframe/safety/learned_model.json.gz (the same weights every time). --check: "
        "only compare with the checked-in model and fail if it differs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = training_rows()
        model = fit([r[0] for r in rows], [r[1] for r in rows])
        attacks = sum(r[1] for r in rows)
        summary = (
            f"{len(rows)} texts ({attacks} attacks, {len(rows) - attacks} benign); "
            f"{len(model['char']['vocabulary'])} character and "
            f"{len(model['word']['vocabulary'])} word features"
        )
        if options["check"]:
            if model != model_read():
                raise CommandError(f"the checked-in model differs from a fresh training: {summary}")
            self.stdout.write(f"the checked-in model is what training gives: {summary}")
            return
        model_write(model)
        self.stdout.write(f"wrote {MODEL_PATH.name}: {summary}")
