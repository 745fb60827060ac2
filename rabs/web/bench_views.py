"""A bare endpoint for ``bench/broker_load.py``: the same stack (daphne, Django, the pooled
connection) doing one ORM INSERT and nothing else, to compare the broker's decisions against.
Mounted only when ``RABS_BENCH_ENDPOINTS`` is on; never in a deployment."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from brainframe.models import AgentNote


@csrf_exempt
def bare_insert(request: HttpRequest) -> JsonResponse:
    note = AgentNote.objects.create(agent_id="henry", content="bench", priority=0)
    return JsonResponse({"id": note.pk})
