from __future__ import annotations

from django.urls import path

from dashboard import approvals, conversations, pages, proposals, views

app_name = "dashboard"

urlpatterns = [
    path("", views.board, name="board"),
    path("approvals/", approvals.approvals, name="approvals"),
    path("approvals/batch/<str:action>/", approvals.approvals_batch, name="approvals-batch"),
    path("approvals/<uuid:approval_id>/", approvals.approval_page, name="approval"),
    path(
        "approvals/<uuid:approval_id>/standing/",
        approvals.approval_standing,
        name="approval-standing",
    ),
    path(
        "approvals/<uuid:approval_id>/<str:action>/",
        approvals.approval_action,
        name="approval-action",
    ),
    path(
        "standing/<uuid:standing_id>/revoke/",
        approvals.standing_revoke_view,
        name="standing-revoke",
    ),
    path("grants/<uuid:grant_id>/revoke/", approvals.grant_revoke_view, name="grant-revoke"),
    path("liveness/", pages.liveness_banner, name="liveness"),
    path("service-levels/", pages.service_levels_page, name="service-levels"),
    path("events/", pages.events_page, name="events"),
    path("replica/", pages.replica_panel, name="replica"),
    path("shadow/", pages.shadow_page, name="shadow"),
    path("webhooks/", pages.webhooks_page, name="webhooks"),
    path("proposals/", proposals.proposals_page, name="proposals"),
    path(
        "proposals/<uuid:proposal_id>/whatif/",
        proposals.proposal_whatif,
        name="proposal-whatif",
    ),
    path(
        "proposals/<uuid:proposal_id>/<str:action>/",
        proposals.proposal_decide_view,
        name="proposal-decide",
    ),
    path("hooks/", pages.hooks_page, name="hooks"),
    path("conversations/", conversations.conversations_page, name="conversations"),
    path(
        "conversations/<uuid:thread_id>/",
        conversations.conversation_page,
        name="conversation",
    ),
    path(
        "conversations/<uuid:thread_id>/chat/",
        conversations.conversation_chat,
        name="conversation-chat",
    ),
    path("hooks/<uuid:hook_id>/<str:action>/", pages.hook_action, name="hook-action"),
    path("preferences/digest/", approvals.digest_preference, name="digest-preference"),
    path("council/", views.council, name="council"),
    path("council/<uuid:proposal_id>/vote/", views.council_vote, name="council-vote"),
    path("notes/<uuid:note_id>/", views.note_update, name="note-update"),
    path("notes/<uuid:note_id>/edit/", views.note_edit, name="note-edit"),
    path(
        "deliverables/<uuid:deliverable_id>/",
        views.deliverable_download,
        name="deliverable-download",
    ),
    path("agents/<slug:agent_id>/supervisor/", views.supervisor_action, name="supervisor-action"),
    path("agents/<slug:agent_id>/model-access/", views.model_access, name="model-access"),
    path("chain/<uuid:o_tag>/", views.chain, name="chain"),
    path("calls/<uuid:call_id>/chain/", views.call_chain, name="call-chain"),
    path("tasks/<uuid:task_id>/chain/", views.task_chain, name="task-chain"),
]
