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

from brainframe.models import ApprovalRequest

from ..errors import BrokerRefusal
from ..services.approvals import OPEN, approval_decide, reviewer_groups
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
        )
        decided.approval.refresh_from_db()
        return Response(ApprovalSerializer(decided.approval).data)


def decision_view(name: str) -> Any:
    return type(f"Approval{name.title()}View", (ApprovalDecisionView,), {"action_name": name})
