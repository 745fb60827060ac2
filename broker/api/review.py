"""The reviewer API: humans decide approvals (session auth, reviewer groups only).

The board and the admin call the same services (``broker.services.approvals``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brainframe.models import ApprovalRequest, StandingApproval
from brainframe.services.access.standing import standing_live, standing_revoke

from ..errors import BrokerRefusal
from ..services.approvals import (
    OPEN,
    approval_approve_standing,
    approval_decide,
    reviewer_groups,
)
from ..services.batches import approvals_decide_batch
from .serializers import ErrorSerializer, StrictSerializer


class IsReviewer(BasePermission):
    message = "only members of the reviewer groups may review approvals"

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(reviewer_groups(request.user))


class ApprovalSerializer(serializers.ModelSerializer):
    decided_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = ApprovalRequest
        fields = [
            "id",
            "tool",
            "agent",
            "tool_call",
            "task",
            "r_tag",
            "vpol",
            "vpol_version",
            "kind",
            "arguments",
            "reason",
            "summary",
            "risk_level",
            "confidence",
            "tags",
            "status",
            "reviewer_group",
            "timeout_at",
            "created_at",
            "decided_at",
            "decided_by",
            "decision_reason",
            "modified_arguments",
            "escalation_count",
        ]


class DecisionSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=4000, required=False, default="", allow_blank=True)
    arguments = serializers.DictField(required=False)
    lesson = serializers.CharField(
        max_length=2000,
        required=False,
        default="",
        allow_blank=True,
        help_text="With reject or modify: a learning card for the agent (docs/ledgers.md).",
    )


class ReviewerAPIView(APIView):
    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAuthenticated, IsReviewer]


class ApprovalListView(ReviewerAPIView):
    @extend_schema(
        parameters=[OpenApiParameter("status", str, description="'open' or an approval status")],
        responses=ApprovalSerializer(many=True),
        summary="Approvals, most urgent first",
    )
    def get(self, request: Request) -> Response:
        status = request.query_params.get("status", "open")
        queryset = ApprovalRequest.objects.select_related("decided_by")
        if status == "open":
            queryset = queryset.filter(status__in=OPEN)
        elif status in ApprovalRequest.Status.values:
            queryset = queryset.filter(status=status)
        else:
            raise BrokerRefusal(400, "invalid_request", "unknown status", field="status")
        return Response(ApprovalSerializer(queryset.order_by("timeout_at")[:200], many=True).data)


class ApprovalDetailView(ReviewerAPIView):
    @extend_schema(responses=ApprovalSerializer)
    def get(self, request: Request, approval_id: str) -> Response:
        approval = ApprovalRequest.objects.filter(pk=approval_id).first()
        if approval is None:
            raise BrokerRefusal(404, "unknown_approval", "no such approval")
        return Response(ApprovalSerializer(approval).data)


class ApprovalDecisionView(ReviewerAPIView):
    action_name = ""

    @extend_schema(
        request=DecisionSerializer,
        responses={
            200: ApprovalSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            409: ErrorSerializer,
        },
    )
    def post(self, request: Request, approval_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise BrokerRefusal(400, "invalid_request", "the body must be a JSON object")
        serializer = DecisionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if not ApprovalRequest.objects.filter(pk=approval_id).exists():
            raise BrokerRefusal(404, "unknown_approval", "no such approval")
        decided = approval_decide(
            approval_id=approval_id,
            reviewer=request.user,  # type: ignore[arg-type]
            action=self.action_name,
            reason=serializer.validated_data["reason"],
            arguments=serializer.validated_data.get("arguments"),
            lesson=serializer.validated_data["lesson"],
        )
        decided.approval.refresh_from_db()
        return Response(ApprovalSerializer(decided.approval).data)


def decision_view(name: str) -> Any:
    return type(f"Approval{name.title()}View", (ApprovalDecisionView,), {"action_name": name})


class BatchSerializer(StrictSerializer):
    action = serializers.ChoiceField(choices=["approve", "reject", "escalate"])
    approval_ids = serializers.ListField(
        child=serializers.UUIDField(), min_length=1, max_length=200
    )
    reason = serializers.CharField(max_length=4000, required=False, default="", allow_blank=True)
    across_chains = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Decide calls of different chains together (otherwise refused: mixed_chains).",
    )


class BatchItemSerializer(serializers.Serializer):
    approval_id = serializers.CharField()
    decided = serializers.BooleanField()
    code = serializers.CharField()
    detail = serializers.CharField()


class BatchAnswerSerializer(serializers.Serializer):
    results = BatchItemSerializer(many=True)


class ApprovalBatchView(ReviewerAPIView):
    @extend_schema(
        request=BatchSerializer,
        responses={200: BatchAnswerSerializer, 400: ErrorSerializer, 403: ErrorSerializer},
        summary="Decide several approvals, each on its own (exactly once each)",
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise BrokerRefusal(400, "invalid_request", "the body must be a JSON object")
        serializer = BatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        results = approvals_decide_batch(
            approval_ids=data["approval_ids"],
            reviewer=request.user,  # type: ignore[arg-type]
            action=data["action"],
            reason=data["reason"],
            across_chains=data["across_chains"],
        )
        return Response({"results": [item.__dict__ for item in results]})


class StandingSerializer(StrictSerializer):
    hours = serializers.FloatField(min_value=0.01)
    any = serializers.ListField(child=serializers.CharField(max_length=200), default=list)
    reason = serializers.CharField(max_length=4000, required=False, default="", allow_blank=True)


class StandingApprovalSerializer(serializers.ModelSerializer):
    granted_by: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True
    )

    class Meta:
        model = StandingApproval
        fields = [
            "id",
            "agent",
            "tool",
            "pattern",
            "vpol",
            "vpol_version",
            "from_approval",
            "granted_by",
            "created_at",
            "until",
            "uses",
            "revoked_at",
            "revoked_reason",
        ]


class StandingAnswerSerializer(serializers.Serializer):
    approval = ApprovalSerializer()
    standing = StandingApprovalSerializer()


class ApprovalStandingView(ReviewerAPIView):
    @extend_schema(
        request=StandingSerializer,
        responses={
            200: StandingAnswerSerializer,
            400: ErrorSerializer,
            403: ErrorSerializer,
            409: ErrorSerializer,
        },
        summary="Approve, and calls exactly like it for the next hours",
    )
    def post(self, request: Request, approval_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise BrokerRefusal(400, "invalid_request", "the body must be a JSON object")
        serializer = StandingSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        if not ApprovalRequest.objects.filter(pk=approval_id).exists():
            raise BrokerRefusal(404, "unknown_approval", "no such approval")
        data = serializer.validated_data
        decided, standing = approval_approve_standing(
            approval_id=approval_id,
            reviewer=request.user,  # type: ignore[arg-type]
            hours=data["hours"],
            any_keys=data["any"],
            reason=data["reason"],
        )
        decided.approval.refresh_from_db()
        return Response(
            {
                "approval": ApprovalSerializer(decided.approval).data,
                "standing": StandingApprovalSerializer(standing).data,
            }
        )


class StandingListView(ReviewerAPIView):
    @extend_schema(
        responses=StandingApprovalSerializer(many=True), summary="Live standing approvals"
    )
    def get(self, request: Request) -> Response:
        return Response(StandingApprovalSerializer(standing_live(), many=True).data)


class StandingRevokeView(ReviewerAPIView):
    @extend_schema(
        request=None,
        responses={200: StandingApprovalSerializer, 404: ErrorSerializer},
        summary="Revoke a standing approval (effective on the next call)",
    )
    def post(self, request: Request, standing_id: str) -> Response:
        standing = StandingApproval.objects.filter(pk=standing_id).first()
        if standing is None:
            raise BrokerRefusal(404, "unknown_standing_approval", "no such standing approval")
        standing_revoke(standing=standing, by=request.user, reason="revoked through the API")
        standing.refresh_from_db()
        return Response(StandingApprovalSerializer(standing).data)
