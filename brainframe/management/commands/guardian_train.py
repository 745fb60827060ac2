"""Rebuild the Guardian's learned stage from the training data (deterministic)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.safety.guardian import domain, semantic
from brainframe.safety.guardian.learned import (
    MODEL_PATH,
    family_rows,
    fit,
    model_read,
    model_write,
    training_rows,
)


class Command(BaseCommand):
    help = (
        "Train the Guardian's learned, semantic and domain stages on eval/corpora's training data "
        "(the domain stage also on the kept-back sets already reported) and write "
        "learned_model.json.gz, semantic_model.json.gz and domain_model.json.gz in "
        "brainframe/safety/guardian/ "
        "(the same weights every time). --check: only compare with the checked-in models and "
        "fail if they differ."
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
        both = rows + family_rows()
        meaning = semantic.fit(
            [r[0] for r in both], [r[1] for r in both], semantic.weights_for([r[2] for r in both])
        )
        own = domain.train()
        if options["check"]:
            if model != model_read():
                raise CommandError(f"the checked-in model differs from a fresh training: {summary}")
            if own != model_read(domain.MODEL_PATH):
                raise CommandError("the checked-in domain model differs from a fresh training")
            if not _close(meaning, semantic.model_read()):
                raise CommandError("the checked-in semantic model differs from a fresh training")
            self.stdout.write(f"the checked-in models are what training gives: {summary}")
            return
        model_write(model)
        semantic.model_write(meaning)
        model_write(own, domain.MODEL_PATH)
        names = f"{MODEL_PATH.name}, {semantic.MODEL_PATH.name} and {domain.MODEL_PATH.name}"
        self.stdout.write(f"wrote {names}: {summary}")


def _close(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same semantic model to within float rounding (its features are float sums, which
    differ in the last bits between CPUs' vector instructions)."""
    return (
        a["threshold"] == b["threshold"]
        and all(
            len(a[k]) == len(b[k])
            and max(abs(x - y) for x, y in zip(a[k], b[k], strict=True)) < 1e-3
            for k in ("idf", "coef")
        )
        and abs(a["intercept"] - b["intercept"]) < 1e-3
    )
