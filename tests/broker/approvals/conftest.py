"""The approval tests' world: reviewers, a senior, a review tool and a task run for a person."""

from __future__ import annotations

from typing import Any

import pytest

from brainframe.models import Agent
from brainframe.services.seed import seed_brainframe
from tests import factories as f


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    seed_brainframe()
    people = f.reviewers()
    carol = f.UserFactory(username="carol")  # the person the task runs for
    tool = f.ToolFactory(
        tool_id="test.roster.write",
        risk_level="write",
        execution_mode="review",
        validation_mode="intercept",
        agent_access=["henry"],
        handler_config={"callable": "tests.echo"},
        input_schema={
            "type": "object",
            "required": ["q"],
            "additionalProperties": False,
            "properties": {"q": {"type": "string", "maxLength": 20}},
        },
    )
    task = f.AgentTaskFactory(agent_id="henry", on_behalf_of=carol, status="in_progress")
    return {
        **people,
        "carol": carol,
        "tool": tool,
        "task": task,
        "henry": Agent.objects.get(agent_id="henry"),
    }
