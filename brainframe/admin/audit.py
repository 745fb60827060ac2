"""The audit (append-only, read-only): origins, reasons, their edges, tool calls and the signed
checkpoints."""

from __future__ import annotations

import json
import uuid

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from brainframe.models import (
    AuditCheckpoint,
    OriginRegistry,
    ReasonEdge,
    ReasonLog,
    ToolCall,
)
from brainframe.selectors import flatten, origin_chain

from .common import (
    ReadOnlyAdmin,
    ReadOnlyInline,
)
from .memory import SemanticSearchMixin


@admin.register(OriginRegistry)
class OriginRegistryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "origin_type",
        "source_ref",
        "bucket",
        "registered_by",
        "timestamp",
        "chain_link",
    )
    list_filter = ("origin_type", "bucket")
    search_fields = ("id", "source_ref")
    list_select_related = ("registered_by",)
    show_full_result_count = False
    readonly_fields = ("chain_link",)

    @admin.display(description="chain")
    def chain_link(self, obj: OriginRegistry) -> str:
        url = reverse("admin:brainframe_originregistry_chain", args=[obj.pk])
        return format_html('<a href="{}">everything from this origin →</a>', url)

    def get_urls(self) -> list[URLPattern]:
        chain = path(
            "<uuid:o_tag>/chain/",
            self.admin_site.admin_view(self.chain_view),
            name="brainframe_originregistry_chain",
        )
        return [chain, *super().get_urls()]

    def chain_view(self, request: HttpRequest, o_tag: uuid.UUID) -> HttpResponse:
        origin, roots = origin_chain(o_tag=o_tag)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Chain of {origin.get_origin_type_display()} {origin.source_ref[:60]}",
            "origin": origin,
            "nodes": flatten(roots),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/brainframe/origin_chain.html", context)


class ReasonEdgeInline(ReadOnlyInline):
    model = ReasonEdge
    fields = ("entity_type", "entity_id", "relationship", "created_at")


@admin.register(ReasonLog)
class ReasonLogAdmin(SemanticSearchMixin, ReadOnlyAdmin):
    semantic_kind = "reason"
    list_display = ("id", "agent", "tool", "short_thought", "o_tag", "vpol", "created_at")
    list_filter = ("agent",)
    search_fields = ("id", "thought", "chain_id")
    list_select_related = ("agent", "tool", "vpol")
    show_full_result_count = False
    exclude = ("vector",)
    inlines = [ReasonEdgeInline]

    @admin.display(description="thought")
    def short_thought(self, obj: ReasonLog) -> str:
        return obj.thought[:80]


@admin.register(ReasonEdge)
class ReasonEdgeAdmin(ReadOnlyAdmin):
    list_display = ("reason", "relationship", "entity_type", "entity_id", "created_at")
    list_filter = ("relationship", "entity_type")
    search_fields = ("entity_id", "entity_type")
    show_full_result_count = False


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    readonly_fields = ("chain_link",)

    @admin.display(description="chain")
    def chain_link(self, obj: ToolCall) -> str:
        if obj.o_tag_id is None:
            return "—"
        url = reverse("admin:brainframe_originregistry_chain", args=[obj.o_tag_id])
        return format_html('<a href="{}">origin and every decision in its chain →</a>', url)

    list_display = (
        "timestamp",
        "agent",
        "requested_tool_id",
        "decision",
        "decision_code",
        "outcome",
        "duration_ms",
        "alignment_rating",
    )
    list_filter = ("decision", "outcome", "agent")
    search_fields = ("id", "requested_tool_id", "decision_code")
    list_select_related = ("agent",)
    show_full_result_count = False
    date_hierarchy = "timestamp"


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ReadOnlyAdmin):
    """Signed statements of the chains' heads (append-only). `manage.py verify_audit` checks
    them and the tables against them; the body is the exact text that was signed."""

    list_display = ("seq", "at", "reason", "key_id", "chains")
    list_filter = ("reason", "key_id")
    search_fields = ("seq",)
    show_full_result_count = False
    date_hierarchy = "at"

    @admin.display(description="chains stated")
    def chains(self, obj: AuditCheckpoint) -> int:
        body = json.loads(obj.body)
        return len(body.get("heads", {})) + len(body.get("threads", {}))
