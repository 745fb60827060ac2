"""Organisational memory: observations and patterns in the 20 context buckets (seed 000 §5–6)."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Value
from pgvector.django import HnswIndex, VectorField

from brainframe.choices import Boundary, ContextBucket, MemorySource, ShareClass

from .agents import Agent
from .audit import EMBEDDING_DIMENSIONS


class ContextBucketEntry(models.Model):
    """One observation or pattern about an entity in a bucket, with its relevance factors.

    ``current_score = severity × frequency × decay × repeatable × family_boost``. A repeat of
    the same (bucket, entity, pattern_type) reinforces this row instead of adding another.
    Nothing is deleted: stale entries decay until they stop surfacing.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    bucket = models.CharField(max_length=32, choices=ContextBucket.choices)
    pattern_type = models.CharField(
        max_length=60, help_text="e.g. preference, recurring_issue, capacity_trend"
    )
    entity = models.CharField(max_length=200, help_text="Staff member, participant, program…")
    observation = models.TextField()
    scoring = models.JSONField(
        default=dict, blank=True, help_text="Scoring detail (factor history, sources)."
    )
    severity = models.PositiveSmallIntegerField(default=1)
    frequency = models.PositiveIntegerField(default=1)
    decay = models.FloatField(default=1.0)
    repeatable = models.FloatField(default=1.0)
    family_boost = models.FloatField(default=1.0)
    current_score = models.FloatField(default=1.0)
    vector = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=120, blank=True)
    source_agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="observations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_reinforced_at = models.DateTimeField(auto_now_add=True)
    # Provenance (seed 001): who made it, from where, how reliable, how used.
    # Sharing (docs/access.md, "Sharing"): bucket observations are shared memory (``all``);
    # the MAC rules still keep a participant's health records and credentials from others.
    boundary = models.CharField(
        max_length=4, choices=Boundary.choices, default=Boundary.ALL, db_default=Boundary.ALL
    )
    share_policy = models.JSONField(
        default=dict, db_default=Value({}, output_field=models.JSONField()), blank=True
    )
    participant_id = models.CharField(max_length=40, blank=True, default="", db_default="")
    data_class = models.CharField(
        max_length=12, choices=ShareClass.choices, default=ShareClass.GENERAL,
        db_default=ShareClass.GENERAL,
    )  # fmt: skip
    created_by = models.CharField(
        max_length=150, blank=True, default="", db_default="", help_text="agent:<id> or a username"
    )
    source = models.CharField(
        max_length=12,
        choices=MemorySource.choices,
        default=MemorySource.API,
        db_default=MemorySource.API,
    )
    confidence = models.FloatField(
        default=1.0, db_default=1.0, help_text="0–1: how reliable it is."
    )
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0, db_default=0)

    class Meta:
        db_table = "context_buckets"
        verbose_name = "context bucket entry"
        verbose_name_plural = "context bucket entries"
        ordering = ["-current_score"]
        constraints = [
            models.UniqueConstraint(
                fields=["bucket", "entity", "pattern_type"],
                name="%(app_label)s_%(class)s_one_row_per_pattern",
            ),
            models.CheckConstraint(
                condition=models.Q(bucket__in=ContextBucket.values),
                name="%(app_label)s_%(class)s_bucket_known",
            ),
            models.CheckConstraint(
                condition=models.Q(severity__gte=1, severity__lte=5),
                name="%(app_label)s_%(class)s_severity_1_5",
            ),
            models.CheckConstraint(
                condition=models.Q(frequency__gte=1),
                name="%(app_label)s_%(class)s_frequency_at_least_1",
            ),
            models.CheckConstraint(
                condition=models.Q(decay__gte=0, decay__lte=1),
                name="%(app_label)s_%(class)s_decay_0_1",
            ),
            models.CheckConstraint(
                condition=models.Q(repeatable__gte=0.5, repeatable__lte=1.5),
                name="%(app_label)s_%(class)s_repeatable_0_5_1_5",
            ),
            models.CheckConstraint(
                condition=models.Q(family_boost__gte=1.0, family_boost__lte=2.0),
                name="%(app_label)s_%(class)s_family_boost_1_2",
            ),
        ]
        indexes = [
            # Semantic search over observations (cosine distance, HNSW).
            HnswIndex(
                name="context_buckets_vector_hnsw",
                fields=["vector"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            # No index on current_score: the nightly decay rewrites every score, and an index
            # on it would turn each row's update from a heap-only (HOT) one into one that
            # touches every index. The table's fillfactor (migration 0011) leaves the room.
            # Family boost and the admin: all observations about one entity.
            models.Index(fields=["entity", "bucket"], name="context_buckets_entity_idx"),
        ]

    def __str__(self) -> str:
        return f"[{self.bucket}] {self.entity}: {self.observation[:60]}"


class DecayRun(models.Model):
    """One night of relevance decay (02:00 Australia/Brisbane), recorded when applied."""

    night = models.DateField(primary_key=True)
    applied_at = models.DateTimeField(auto_now_add=True)
    rows_updated = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "decay_runs"
        ordering = ["-night"]

    def __str__(self) -> str:
        return f"decay night {self.night}"
