"""The council in the admin: proposals (opened here or by an edit that needs the council), their
votes (read-only), the seats (read-only once the council is seated), reviewers' preferences and
standing approvals.

``CouncilGatedAdmin`` is what makes the council binding: on the constitution, the prime
directives and council-governed V-Pols, Save opens a proposal instead of changing the rule
(staff see where it went); only a superuser of an installation whose council has no members yet
saves directly.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from simple_history.admin import SimpleHistoryAdmin

from brainframe.models import (
    CouncilMember,
    CouncilProposal,
    CouncilVote,
    ReviewerPreference,
    StandingApproval,
)
from brainframe.services.access.standing import standing_revoke
from brainframe.services.council.votes import CouncilError, needs_council, proposal_open

from .common import JSONEditingMixin, ReadOnlyAdmin, ReadOnlyInline, pretty_json


class CouncilGatedAdmin(admin.ModelAdmin):
    """Save opens a council proposal when ``proposal_for`` says the change needs one."""

    def proposal_for(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> tuple[str, str, dict[str, Any], str] | None:
        """(kind, target, change, title) when this save needs the council, else None."""
        raise NotImplementedError

    def save_directly(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)

    def save_model(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool
    ) -> None:
        gated = needs_council(request.user)
        asked = self.proposal_for(request, obj, form, change) if gated else None
        if asked is None:
            self.save_directly(request, obj, form, change)
            return
        kind, target, proposed, title = asked
        try:
            proposal = proposal_open(
                kind=kind,
                target=target,
                change=proposed,
                title=title,
                by=request.user,  # type: ignore[arg-type]
            )
        except CouncilError as exc:
            request._council_refused = exc  # type: ignore[attr-defined]
            return
        request._council_proposal = proposal  # type: ignore[attr-defined]

    def _diverted(self, request: HttpRequest) -> bool:
        return hasattr(request, "_council_proposal") or hasattr(request, "_council_refused")

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if not self._diverted(request):
            super().save_related(request, form, formsets, change)

    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> Any:
        if not self._diverted(request):
            return super().log_addition(request, obj, message)
        return None

    def log_change(self, request: HttpRequest, obj: Model, message: Any) -> Any:
        if not self._diverted(request):
            return super().log_change(request, obj, message)
        return None

    def _council_response(self, request: HttpRequest) -> HttpResponse | None:
        refused = getattr(request, "_council_refused", None)
        if refused is not None:
            self.message_user(
                request, f"Not changed: {refused.detail} ({refused.code}).", messages.ERROR
            )
            return HttpResponseRedirect(request.get_full_path())
        proposal = getattr(request, "_council_proposal", None)
        if proposal is None:
            return None
        self.message_user(
            request,
            f"This change needs the council: proposal “{proposal.title}” is open for votes until "
            f"{timezone.localtime(proposal.deadline):%Y-%m-%d %H:%M} ({proposal.yes_needed} of "
            f"{len(proposal.electorate)} yes votes pass it). Nothing changes until it passes.",
            messages.WARNING,
        )
        return HttpResponseRedirect(
            reverse("admin:brainframe_councilproposal_change", args=[proposal.pk])
        )

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        return self._council_response(request) or super().response_add(
            request, obj, post_url_continue
        )

    def response_change(self, request: HttpRequest, obj: Any) -> Any:
        return self._council_response(request) or super().response_change(request, obj)


class VoteInline(ReadOnlyInline):
    model = CouncilVote
    fields = ("seq", "member", "choice", "comment", "cast_at", "row_hash")
    readonly_fields = fields
    ordering = ("seq",)


class ProposalForm(forms.ModelForm):
    hours = forms.FloatField(
        required=False, min_value=0.1, max_value=720, help_text="How long the vote lasts."
    )

    class Meta:
        model = CouncilProposal
        fields = ("kind", "target", "change", "title", "rationale")


@admin.register(CouncilProposal)
class CouncilProposalAdmin(JSONEditingMixin, SimpleHistoryAdmin):
    """Open a proposal here (or by editing a council-governed rule); members vote on the board."""

    form = ProposalForm
    list_display = ("title", "kind", "target", "status", "deadline", "proposed_by", "created_at")
    list_filter = ("status", "kind")
    search_fields = ("title", "target", "rationale")
    inlines = [VoteInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        return (
            "kind",
            "target",
            "change_shown",
            "title",
            "rationale",
            "proposed_by",
            "status",
            "outcome",
            "yes_needed",
            "quorum",
            "electorate",
            "deadline",
            "created_at",
            "closed_at",
            "what_if_shown",
        )

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("kind", "target", "change", "title", "rationale", "hours")
        return self.get_readonly_fields(request, obj)

    @admin.display(description="change")
    def change_shown(self, obj: CouncilProposal) -> str:
        return pretty_json(obj.change)

    @admin.display(description="what it would have changed")
    def what_if_shown(self, obj: CouncilProposal) -> str:
        return pretty_json(obj.what_if)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        data = form.cleaned_data
        try:
            created = proposal_open(
                kind=data["kind"],
                target=data["target"],
                change=data.get("change") or {},
                title=data["title"],
                rationale=data.get("rationale", ""),
                hours=data.get("hours"),
                by=request.user,  # type: ignore[arg-type]
            )
        except CouncilError as exc:
            request._council_refused = exc  # type: ignore[attr-defined]
            return
        obj.pk = created.pk
        obj._state.adding = False

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if not hasattr(request, "_council_refused"):
            super().save_related(request, form, formsets, change)

    def log_addition(self, request: HttpRequest, obj: Model, message: Any) -> Any:
        if not hasattr(request, "_council_refused"):
            return super().log_addition(request, obj, message)
        return None

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        refused = getattr(request, "_council_refused", None)
        if refused is not None:
            where = f" ({refused.field})" if refused.field else ""
            self.message_user(
                request, f"Not opened: {refused.detail}{where} [{refused.code}].", messages.ERROR
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_add(request, obj, post_url_continue)


@admin.register(CouncilMember)
class CouncilMemberAdmin(SimpleHistoryAdmin):
    """Seats: read-only once the council has members (seat and unseat by proposal)."""

    list_display = ("user", "seated_at", "seated_by")
    readonly_fields = ("seated_at", "seated_by")
    autocomplete_fields = ()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser) and not CouncilMember.objects.exists()

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(CouncilVote)
class CouncilVoteAdmin(ReadOnlyAdmin):
    list_display = ("proposal", "seq", "member", "choice", "cast_at")
    list_filter = ("choice",)


@admin.register(ReviewerPreference)
class ReviewerPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "digest", "last_digest_at")
    list_filter = ("digest",)
    readonly_fields = ("last_digest_at",)


@admin.register(StandingApproval)
class StandingApprovalAdmin(ReadOnlyAdmin):
    """Standing approvals: created and revoked on the board (or by the API); read here."""

    list_display = ("tool", "agent", "granted_by", "until", "uses", "revoked_at")
    list_filter = ("tool", "agent")
    actions = ["revoke"]

    @admin.display(description="pattern")
    def pattern_shown(self, obj: StandingApproval) -> str:
        return pretty_json(obj.pattern)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and request.user.has_perm("brainframe.change_standingapproval")

    @admin.action(description="Revoke now")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        count = sum(
            standing_revoke(standing=s, by=request.user, reason="revoked in the admin")
            for s in queryset
        )
        self.message_user(request, f"Revoked {count} standing approval(s).", messages.SUCCESS)
