"""LLM cost: the price table and recorded usage."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from brainframe.models import (
    LLMUsage,
    ModelPrice,
)

from .common import (
    JSONEditingMixin,
    ReadOnlyAdmin,
)


@admin.register(ModelPrice)
class ModelPriceAdmin(JSONEditingMixin, admin.ModelAdmin):
    list_display = ("model", "input_per_million", "output_per_million", "per_minute", "updated_at")
    search_fields = ("model",)


@admin.register(LLMUsage)
class LLMUsageAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "agent",
        "mode",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
        "cost",
        "task",
    )
    list_filter = ("mode", "agent", "model")
    search_fields = ("model", "query_ref", "agent__agent_id")
    list_select_related = ("agent", "task")
    date_hierarchy = "created_at"
    show_full_result_count = False

    @admin.display(description="cost (USD)", ordering="cost_usd")
    def cost(self, obj: LLMUsage) -> str:
        return "no price" if obj.cost_usd is None else f"{obj.cost_usd:.4f}"

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        changelist = getattr(response, "context_data", {}).get("cl")
        if isinstance(response, TemplateResponse) and changelist is not None:
            assert response.context_data is not None
            totals = changelist.queryset.aggregate(total=Sum("cost_usd"), queries=Count("id"))
            response.context_data["title"] = (
                f"LLM usage: {totals['queries']} "
                f"{'query' if totals['queries'] == 1 else 'queries'}, "
                f"USD {totals['total'] or 0:.4f} (filtered)"
            )
        return response
