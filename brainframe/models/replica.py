"""What Super Reggie's read replica shows (seed 000 §8: "read replica database access")."""

from __future__ import annotations

from django.db import models


class ReplicaView(models.Model):
    """A view of the ``replica`` schema that the replica's read-only role may read.

    The views themselves are SQL in the migrations (curated: no secrets, no keys, no message
    texts); staff choose which of them the role sees. Saving a change re-grants the role on the
    primary (``replica_grants_sync``), and the standby has it as soon as it replays it.
    """

    name = models.SlugField(
        primary_key=True, max_length=63, help_text="The view's name in the replica schema."
    )
    description = models.TextField(blank=True, help_text="What it holds, as agents are told.")
    exposed = models.BooleanField(
        default=True, help_text="The replica's read-only role may read it."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "replica_views"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(name__regex=r"^[a-z][a-z0-9_]*$"),
                name="%(app_label)s_%(class)s_name_identifier",
            ),
        ]

    def __str__(self) -> str:
        return f"replica.{self.name}" + ("" if self.exposed else " (hidden)")
