"""An installed ``rabs.capability.request`` learns the ``person`` kind (docs/access.md, "Temporary
grants"): its description and input schema are set to the current baseline's. The seed only
creates missing system tools, so without this an upgraded deployment would keep refusing
person grants as invalid arguments."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from brainframe.safety.policy.baseline import SYSTEM_TOOLS

TOOL_ID = "rabs.capability.request"


def forward(apps: Any, schema_editor: Any) -> None:
    Tool = apps.get_model("brainframe", "Tool")
    baseline = next(t for t in SYSTEM_TOOLS if t["tool_id"] == TOOL_ID)
    Tool.objects.filter(pk=TOOL_ID).update(
        description=baseline["description"], input_schema=baseline["input_schema"]
    )


class Migration(migrations.Migration):
    dependencies = [("brainframe", "0036_memory_sharing")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
