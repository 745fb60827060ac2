"""The deployment's checkpoint key: print its public keys (for verifiers), or rotate it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from broker.audit.keys import (
    CheckpointKeyMissing,
    checkpoint_key_rotate,
    checkpoint_public_keys_pem,
)


class Command(BaseCommand):
    help = (
        "Print every trusted public key of the checkpoints (PEM, the current one first): hand it "
        "to `python -m broker.verify_export FILE --public-key KEYS.pem`. With --rotate, retire "
        "the current key (its public key kept) and generate a new one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rotate", action="store_true", help="retire the key, make a new one")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["rotate"]:
                old, new = checkpoint_key_rotate()
                self.stderr.write(f"key {old} retired (its public key kept); signing with {new}")
            self.stdout.write(checkpoint_public_keys_pem(), ending="")
        except CheckpointKeyMissing as exc:
            raise CommandError(str(exc)) from None
