"""Embedding after commit, semantic search, the context endpoint, the admin box, reembed."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from brainframe.jobs import job_run
from brainframe.models import ContextBucketEntry, ReasonLog, Tool
from brainframe.services.memory.indexing import index_pending, pending
from brainframe.services.memory.observations import observation_record
from brainframe.services.memory.search import semantic_search
from tests import factories as f
from tests.signing import SignedClient

MODEL = "local:all-mpnet-base-v2"

#: (bucket, entity, pattern_type, observation): a small organisational memory.
MEMORY = [
    ("transportation", "Hiace 2", "recurring_issue",
     "The Hiace's wheelchair ramp sticks and delays morning pick-ups."),
    ("transportation", "Redcliffe run", "capacity_trend",
     "The Redcliffe run is regularly over capacity on Mondays."),
    ("billing_finance", "Harper plan manager", "recurring_issue",
     "Harper's plan manager pays invoices about 40 days late."),
    ("rostering_scheduling", "Saturday casuals", "capacity_trend",
     "Saturday shifts are hard to fill during school holidays."),
    ("health_medical_wellbeing", "Ben", "preference",
     "Ben takes his epilepsy medication with breakfast, never on an empty stomach."),
    ("facilities_assets", "Springwood house", "recurring_issue",
     "The hot water system at Springwood keeps failing in winter."),
    ("participant_goals", "Emma", "progress",
     "Emma is learning to catch the bus to the shops on her own."),
    ("incidents_safety", "Day centre ramp", "hazard",
     "The ramp at the day centre is slippery when wet."),
    ("vendor_suppliers", "Linen service", "recurring_issue",
     "The linen service delivers late most weeks."),
    ("payroll_alliance", "Alliance export", "recurring_issue",
     "The Alliance payroll export fails when a timesheet has no cost centre."),
]  # fmt: skip

#: A query and the entity it should find first, in words the observation does not use.
QUERIES = [
    ("Which vehicle has a faulty lift for wheelchairs?", "Hiace 2"),
    ("Who is slow to settle their bills?", "Harper plan manager"),
    ("trouble finding weekend staff", "Saturday casuals"),
    ("seizure tablets and meals", "Ben"),
    ("no warm showers at the house", "Springwood house"),
    ("independent travel on public transport", "Emma"),
    ("slip hazard at the entrance", "Day centre ramp"),
    ("sheets and towels arrive late", "Linen service"),
    ("why did the pay run import break", "Alliance export"),
]


@pytest.fixture
def memory(seeded: None) -> list[ContextBucketEntry]:
    ContextBucketEntry.objects.all().delete()  # only this memory, not the demo seed's
    entries = [
        observation_record(
            agent=None, bucket=b, entity=e, pattern_type=p, observation=o, severity=2
        )[0]
        for b, e, p, o in MEMORY
    ]
    index_pending()
    for entry in entries:
        entry.refresh_from_db()
    return entries


def test_rows_are_embedded_after_commit(
    henry: SignedClient, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.RABS_INDEX_ON_COMMIT = True
    payload = {
        "bucket": "transportation",
        "entity": "Hiace 4",
        "pattern_type": "recurring_issue",
        "observation": "Brakes squeal on the Hiace 4.",
    }
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        henry.post("/api/v1/observations/", payload)
    entry = ContextBucketEntry.objects.get(entity="Hiace 4")
    assert entry.vector is None  # stored first, searchable by text meanwhile
    assert semantic_search("squeal brakes", kinds=("observation",)).hits[0].matched_by == "text"
    for callback in callbacks:
        callback()
    entry.refresh_from_db()
    assert entry.vector is not None and len(entry.vector) == 768
    assert entry.embedding_model == MODEL


def test_reasons_are_embedded_after_commit(
    henry: SignedClient, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.RABS_INDEX_ON_COMMIT = True
    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    with django_capture_on_commit_callbacks(execute=True):
        body = henry.post(
            "/api/v1/tool-calls/",
            {
                "tool_id": "roster.shift.read",
                "reason": "check Monday coverage before confirming the outing",
                "arguments": {"date_from": "2026-03-02", "date_to": "2026-03-02"},
            },
        ).json()
    reason = ReasonLog.objects.get(pk=body["r_tag"])
    assert reason.vector is not None and reason.embedding_model == MODEL


def test_new_words_get_a_new_vector_same_words_keep_theirs(memory: list[Any]) -> None:
    entry = memory[0]
    old_vector = list(entry.vector)
    same, _ = observation_record(
        agent=None,
        bucket=entry.bucket,
        entity=entry.entity,
        pattern_type=entry.pattern_type,
        observation=entry.observation,
    )
    assert same.frequency == 2 and list(same.vector) == old_vector
    changed, _ = observation_record(
        agent=None,
        bucket=entry.bucket,
        entity=entry.entity,
        pattern_type=entry.pattern_type,
        observation="The Hiace's ramp was fixed but squeaks.",
    )
    assert changed.frequency == 3 and changed.vector is None and changed.embedding_model == ""
    assert index_pending()["observation"] == 1
    changed.refresh_from_db()
    assert changed.vector is not None and list(changed.vector) != old_vector


def test_semantic_search_finds_the_expected_neighbours(memory: list[Any]) -> None:
    found = []
    for query, expected in QUERIES:
        hits = semantic_search(query, kinds=("observation",), limit=3).hits
        assert hits and all(h.matched_by == "vector" for h in hits)
        found.append(hits[0].entity == expected)
    assert all(found), [q for (q, _), ok in zip(QUERIES, found, strict=True) if not ok]


def test_search_filters_by_bucket_and_entity(memory: list[Any]) -> None:
    in_transport = semantic_search(
        "late", kinds=("observation",), buckets=["transportation"], limit=10
    )
    assert {h.bucket for h in in_transport.hits} == {"transportation"}
    assert len(in_transport.hits) == 2
    one = semantic_search("anything at all", entity="emma", limit=10)
    assert [h.entity for h in one.hits] == ["Emma"]


def test_relevance_lifts_the_fresh_over_the_stale(memory: list[Any]) -> None:
    for entity in ("House A", "House B"):
        observation_record(
            agent=None,
            bucket="facilities_assets",
            entity=entity,
            pattern_type="recurring_issue",
            observation="The back door lock jams.",
            severity=2,
        )
    index_pending()
    ContextBucketEntry.objects.filter(entity="House A").update(decay=0.027, current_score=0.027)
    hits = semantic_search("door lock jams", kinds=("observation",), limit=2).hits
    assert [h.entity for h in hits] == ["House B", "House A"]
    assert abs(hits[0].similarity - hits[1].similarity) < 0.05
    # Below the surfacing floor, it does not come back at all.
    floor = semantic_search("door lock jams", kinds=("observation",), min_relevance=0.05)
    assert "House A" not in {h.entity for h in floor.hits}


def test_search_answers_from_text_when_the_model_is_missing(
    memory: list[Any], settings: Any
) -> None:
    settings.RABS_EMBEDDING_MODEL_PATH = "/nonexistent/model"
    result = semantic_search("linen service", kinds=("observation",))
    assert result.mode == "text"
    assert result.hits[0].entity == "Linen service"


def test_context_endpoint_ranks_observations_for_the_task(
    henry: SignedClient, memory: list[Any]
) -> None:
    body = henry.get("/api/v1/context/?q=weekend+shifts+nobody+wants").json()
    assert body["search_mode"] == "semantic"
    assert body["observations"][0]["entity"] == "Saturday casuals"
    task = f.AgentTaskFactory(
        agent_id="henry",
        title="Book transport for the Monday outing",
        payload={"tools": ["transport.vehicle.book"], "description": "wheelchair user attending"},
    )
    body = henry.get(f"/api/v1/context/?task_id={task.task_id}").json()
    entities = [o["entity"] for o in body["observations"]]
    assert entities[0] == "Hiace 2"
    assert {o["bucket"] for o in body["observations"]} == {"transportation"}
    bad = henry.get("/api/v1/context/?bucket=gossip")
    assert bad.status_code == 400 and bad.json()["field"] == "bucket"


def test_reason_search_is_limited_to_the_agent(
    henry: SignedClient, memory: list[Any], django_user_model: Any
) -> None:
    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    henry.post(
        "/api/v1/tool-calls/",
        {
            "tool_id": "roster.shift.read",
            "reason": "find cover for the Saturday sleepover",
            "arguments": {"date_from": "2026-03-07", "date_to": "2026-03-07"},
        },
    )
    index_pending()
    henry_agent = ReasonLog.objects.get().agent
    mine = semantic_search("overnight shift cover", kinds=("reason",), agent=henry_agent)
    assert mine.hits and mine.hits[0].kind == "reason"
    other = f.AgentFactory(agent_id="someone-else")
    assert semantic_search("overnight shift cover", kinds=("reason",), agent=other).hits == []


def test_admin_search_box_searches_by_meaning(memory: list[Any], admin_client: Client) -> None:
    response = admin_client.get(
        "/admin/brainframe/contextbucketentry/", {"q": "sheets and towels arrive late"}
    )
    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert rows[0].entity == "Linen service"  # no shared words: found by meaning
    assert "match" in response.content.decode()
    reasons = admin_client.get("/admin/brainframe/reasonlog/", {"q": "anything"})
    assert reasons.status_code == 200


def test_reembed_is_resumable_and_switches_models(
    memory: list[Any], tmp_path: Any, settings: Any
) -> None:
    out = io.StringIO()
    call_command("reembed", "--no-progress", stdout=out)
    assert "0 observation rows to embed" in out.getvalue()
    # Another model (here: the same weights under another name) makes every row pending.
    other = tmp_path / "mpnet-copy"
    os.symlink(settings.RABS_EMBEDDING_MODEL_PATH, other)
    assert pending("observation", "local:mpnet-copy").count() == len(MEMORY)
    from brainframe.embeddings.indexer import LocalIndexer

    index_pending(indexer=LocalIndexer(other), kinds=["observation"], limit=4)  # interrupted
    out = io.StringIO()
    call_command("reembed", "--no-progress", "--model", str(other), stdout=out)
    assert f"{len(MEMORY) - 4} observation rows to embed" in out.getvalue()
    assert pending("observation", "local:mpnet-copy").count() == 0
    assert set(ContextBucketEntry.objects.values_list("embedding_model", flat=True)) == {
        "local:mpnet-copy"
    }


def test_reembed_refuses_a_missing_model(seeded: None) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no embedding model"):
        call_command("reembed", "--model", "/nonexistent/model", "--no-progress")


def test_index_job_embeds_what_was_left(seeded: None) -> None:
    observation_record(
        agent=None,
        bucket="transportation",
        entity="Van 9",
        pattern_type="recurring_issue",
        observation="Van 9 needs new tyres.",
    )
    done = job_run(name="index")
    assert done["observation"] >= 1
    assert not ContextBucketEntry.objects.filter(vector=None).exists()
