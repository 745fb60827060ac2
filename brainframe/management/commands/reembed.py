"""``manage.py reembed [--model M] [--kind observation|reason] [--batch-size N]``.

Embeds every observation and reason whose vector is missing or was made by another model, with a
progress bar. Each batch commits on its own: stop it at any point and run it again to resume.
``--model`` picks the model (a local model directory, or an endpoint's model id when
``RABS_EMBEDDING_BACKEND=openai``); rows are then re-embedded with it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from brainframe.embeddings.indexer import IndexerUnavailable, get_indexer
from brainframe.services.memory.indexing import KINDS, index_pending, pending


class Command(BaseCommand):
    help = "Embed (again) every row without a vector from the chosen model; resumable."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", help="Model path (local) or id (openai); default: settings")
        parser.add_argument("--kind", choices=sorted(KINDS), action="append", dest="kinds")
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument("--no-progress", action="store_true", help="No progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            indexer = get_indexer(options["model"])
            indexer.embed(["warm-up"])  # fail now, clearly, not after the first batch
        except IndexerUnavailable as exc:
            raise CommandError(str(exc)) from exc
        kinds = options["kinds"] or list(KINDS)
        todo = {kind: pending(kind, indexer.name).count() for kind in kinds}
        self.stdout.write(
            f"{indexer.name}: " + ", ".join(f"{n} {kind} rows to embed" for kind, n in todo.items())
        )
        bar = tqdm(
            total=sum(todo.values()),
            unit="row",
            disable=options["no_progress"],
            file=self.stderr._out,
        )
        with bar:
            done = index_pending(
                indexer=indexer,
                kinds=kinds,
                batch_size=options["batch_size"],
                progress=lambda kind, n: bar.update(n),
            )
        self.stdout.write(
            self.style.SUCCESS(
                "embedded " + ", ".join(f"{n} {kind} rows" for kind, n in done.items())
            )
        )
