"""Memory: context-bucket observations, searchable by meaning."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Case, FloatField, QuerySet, Value, When
from django.http import HttpRequest

from brainframe.models import (
    ContextBucketEntry,
)
from brainframe.services.memory.search import semantic_search

from .common import (
    JSONEditingMixin,
    SharePolicyFormMixin,
)


class SemanticSearchMixin(admin.ModelAdmin):
    """The admin search box also searches by meaning, best matches first.

    Text matches (``search_fields``) and the semantic search's hits are shown together, ordered
    by the semantic score (``brainframe.services.memory.search``); the list filters still apply.
    """

    semantic_kind: str = ""
    semantic_limit = 50

    @staticmethod
    def _term(request: HttpRequest) -> str:
        return request.GET.get("q", "").strip()

    def _scores(self, request: HttpRequest) -> dict[Any, float]:
        cached: dict[Any, float] | None = getattr(request, "_semantic_scores", None)
        if cached is None:
            result = semantic_search(
                self._term(request), kinds=(self.semantic_kind,), limit=self.semantic_limit
            )
            cached = {hit.id: hit.score for hit in result.hits}
            request._semantic_scores = cached  # type: ignore[attr-defined]
        return cached

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        if not self._term(request):
            return super().get_queryset(request)
        request._semantic_ranked = False  # type: ignore[attr-defined]
        qs = super().get_queryset(request)  # default ordering: no rank annotated yet
        scores = self._scores(request)
        rank = Case(
            *[When(pk=pk, then=Value(score)) for pk, score in scores.items()],
            default=Value(0.0),
            output_field=FloatField(),
        )
        request._semantic_ranked = True  # type: ignore[attr-defined]
        return qs.annotate(semantic_rank=rank)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        matched, duplicates = super().get_search_results(request, queryset, search_term)
        if not search_term.strip() or not getattr(request, "_semantic_ranked", False):
            return matched, duplicates
        return matched | queryset.filter(pk__in=list(self._scores(request))), duplicates

    def get_ordering(self, request: HttpRequest) -> list[str] | tuple[str, ...]:
        # Only once get_queryset has annotated the rank (the changelist asks again after).
        if getattr(request, "_semantic_ranked", False):
            return ["-semantic_rank"]
        return super().get_ordering(request)

    @admin.display(description="match", ordering="semantic_rank")
    def search_match(self, obj: Any) -> str:
        rank = getattr(obj, "semantic_rank", None)
        return "—" if rank is None else f"{rank:.2f}"

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = tuple(super().get_list_display(request))
        return (*shown, "search_match") if self._term(request) else shown


class ContextBucketEntryForm(SharePolicyFormMixin):
    class Meta:
        model = ContextBucketEntry
        fields = "__all__"  # the admin's own exclude keeps the vector out


@admin.register(ContextBucketEntry)
class ContextBucketEntryAdmin(JSONEditingMixin, SemanticSearchMixin):
    """Shared memory; who else may read each entry is its boundary, participant, data class and
    sharing policy (docs/access.md, "Sharing")."""

    form = ContextBucketEntryForm
    semantic_kind = "observation"
    list_display = (
        "bucket",
        "entity",
        "pattern_type",
        "short_observation",
        "severity",
        "frequency",
        "decay",
        "current_score",
        "has_embedding",
    )
    list_filter = ("bucket", "pattern_type", "severity", "boundary", "data_class")
    search_fields = ("entity", "observation", "pattern_type", "participant_id")
    list_select_related = ("source_agent",)
    show_full_result_count = False
    exclude = ("vector",)
    readonly_fields = ("current_score", "embedding_model", "created_at", "last_reinforced_at")

    @admin.display(description="observation")
    def short_observation(self, obj: ContextBucketEntry) -> str:
        return obj.observation[:80]

    @admin.display(boolean=True, description="embedded")
    def has_embedding(self, obj: ContextBucketEntry) -> bool:
        return obj.vector is not None
