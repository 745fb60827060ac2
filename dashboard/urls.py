from __future__ import annotations

from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.board, name="board"),
    path("approvals/", views.approvals, name="approvals"),
    path(
        "approvals/<uuid:approval_id>/<str:action>/", views.approval_action, name="approval-action"
    ),
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
