from __future__ import annotations

from django.urls import path

from . import channel_views, ledger_views, loop_views, review, views

app_name = "broker"

urlpatterns = [
    path("tools/", views.ToolsView.as_view(), name="tools"),
    path("tool-calls/", views.ToolCallsView.as_view(), name="tool-calls"),
    path("tool-calls/<uuid:call_id>/", views.ToolCallDetailView.as_view(), name="tool-call"),
    path("tasks/", views.TasksView.as_view(), name="tasks"),
    path("tasks/<uuid:task_id>/claim/", views.TaskClaimView.as_view(), name="task-claim"),
    path("tasks/<uuid:task_id>/progress/", views.TaskProgressView.as_view(), name="task-progress"),
    path("tasks/<uuid:task_id>/complete/", views.TaskCompleteView.as_view(), name="task-complete"),
    path("tasks/<uuid:task_id>/fail/", views.TaskFailView.as_view(), name="task-fail"),
    path("deliverables/", views.DeliverablesView.as_view(), name="deliverables"),
    path(
        "deliverables/<uuid:deliverable_id>/",
        views.DeliverableView.as_view(),
        name="deliverable",
    ),
    path("heartbeat/", views.HeartbeatView.as_view(), name="heartbeat"),
    path("context/", views.ContextView.as_view(), name="context"),
    path("observations/", views.ObservationsView.as_view(), name="observations"),
    path("inbound/events/", views.InboundEventsView.as_view(), name="inbound-events"),
    path("usage/", views.UsageView.as_view(), name="usage"),
    path("plans/events/", loop_views.PlanEventsView.as_view(), name="plan-events"),
    path("core/events/", loop_views.CoreEventsView.as_view(), name="core-events"),
    path("turns/", ledger_views.TurnsView.as_view(), name="turns"),
    path("turns/record/", ledger_views.TurnRecordView.as_view(), name="turn-record"),
    path("turns/<uuid:turn_id>/", ledger_views.TurnDetailView.as_view(), name="turn"),
    path(
        "turns/<uuid:turn_id>/messages/",
        ledger_views.TurnMessagesView.as_view(),
        name="turn-messages",
    ),
    path(
        "turns/<uuid:turn_id>/complete/",
        ledger_views.TurnCompleteView.as_view(),
        name="turn-complete",
    ),
    path(
        "threads/<uuid:thread_id>/compact/",
        ledger_views.ThreadCompactView.as_view(),
        name="thread-compact",
    ),
    path(
        "threads/<uuid:thread_id>/context/",
        ledger_views.ThreadContextView.as_view(),
        name="thread-context",
    ),
    path("channels/<slug:name>/", ledger_views.channel_inbound, name="channel-inbound"),
    path("channels/<slug:name>/status/", channel_views.channel_status, name="channel-status"),
    path("discover/", loop_views.DiscoverView.as_view(), name="discover"),
    path("loop/yield/", loop_views.YieldView.as_view(), name="loop-yield"),
    path("hooks/", loop_views.HooksView.as_view(), name="hooks"),
    path("hooks/<uuid:hook_id>/", loop_views.HookDetailView.as_view(), name="hook"),
    path("hooks/<uuid:hook_id>/enable/", loop_views.HookEnableView.as_view(), name="hook-enable"),
    path(
        "hooks/<uuid:hook_id>/disable/", loop_views.HookDisableView.as_view(), name="hook-disable"
    ),
    # Reviewers (session auth)
    path("review/approvals/", review.ApprovalListView.as_view(), name="review-approvals"),
    path("review/approvals/batch/", review.ApprovalBatchView.as_view(), name="review-batch"),
    path(
        "review/approvals/<uuid:approval_id>/standing/",
        review.ApprovalStandingView.as_view(),
        name="review-standing-approve",
    ),
    path("review/standing/", review.StandingListView.as_view(), name="review-standing"),
    path(
        "review/standing/<uuid:standing_id>/revoke/",
        review.StandingRevokeView.as_view(),
        name="review-standing-revoke",
    ),
    path(
        "review/approvals/<uuid:approval_id>/",
        review.ApprovalDetailView.as_view(),
        name="review-approval",
    ),
    *[
        path(
            f"review/approvals/<uuid:approval_id>/{action}/",
            review.decision_view(action).as_view(),
            name=f"review-{action}",
        )
        for action in ("approve", "reject", "modify", "escalate")
    ],
]
