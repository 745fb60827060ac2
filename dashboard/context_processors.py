from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from brainframe.models import ApprovalRequest
from broker.liveness import missing_parts


def open_approvals(request: HttpRequest) -> dict[str, Any]:
    """The count in the board's navigation, and which background parts are missing (the
    banner), on pages under /board/ only."""
    if not request.path.startswith("/board/") or not request.user.is_authenticated:
        return {}
    return {
        "board_page": True,
        "open_count": ApprovalRequest.objects.filter(
            status__in=[ApprovalRequest.Status.PENDING, ApprovalRequest.Status.ESCALATED]
        ).count(),
        "liveness_missing": missing_parts(),
    }
