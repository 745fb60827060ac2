"""factory-boy factories for the brainframe tables."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from brainframe import models as m
from brainframe.choices import ContextBucket, DataClass, RiskLevel


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@rabs.test")
    password = factory.django.Password("pw-for-tests")


def reviewers() -> dict[str, Any]:
    """Alice and Bob in the reviewers group, Dana in the senior reviewers (groups the seed makes),
    each with an e-mail address."""
    people: dict[str, Any] = {name: UserFactory(username=name) for name in ("alice", "bob", "dana")}
    group = Group.objects.get(name="reviewers")
    people["alice"].groups.add(group)
    people["bob"].groups.add(group)
    people["dana"].groups.add(Group.objects.get(name="senior_reviewers"))
    return people


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Agent
        django_get_or_create = ("agent_id",)

    agent_id = factory.Sequence(lambda n: f"agent{n}")
    name = factory.LazyAttribute(lambda a: a.agent_id.title())
    type = m.Agent.Type.SANDBOXED
    role = "operations"


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.Tool
        django_get_or_create = ("tool_id",)

    tool_id = factory.Sequence(lambda n: f"test.tool{n}.read")
    description = "A tool for tests"
    category = m.Tool.Category.OPERATIONS
    risk_level = RiskLevel.READ
    execution_mode = "auto"
    context_bucket = ContextBucket.ROSTERING_SCHEDULING
    data_class = DataClass.LOGISTICS
    handler_type = m.Tool.HandlerType.FUNCTION
    handler_config = factory.LazyFunction(lambda: {"callable": "tests.echo"})
    input_schema = factory.LazyFunction(
        lambda: {"type": "object", "properties": {"q": {"type": "string"}}}
    )
    agent_access = factory.LazyFunction(list)


class ValidationPolicyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.ValidationPolicy

    name = factory.Sequence(lambda n: f"policy_{n}")
    rules = factory.LazyFunction(list)


class OriginFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.OriginRegistry

    origin_type = m.OriginRegistry.OriginType.EMAIL
    source_ref = factory.Sequence(lambda n: f"<msg-{n}@mail.rabs.test>")
    metadata = factory.LazyFunction(lambda: {"from": "carer@example.org"})


class ReasonLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.ReasonLog

    o_tag = factory.SubFactory(OriginFactory)
    agent = factory.SubFactory(AgentFactory)
    chain_id = factory.Faker("uuid4", cast_to=None)
    thought = "participant requested schedule change"
    confidence = 0.8


class ToolCallFactory(factory.django.DjangoModelFactory):
    """A tool_calls row. The hash fields are placeholders: chain integrity is the broker's."""

    class Meta:
        model = m.ToolCall

    agent = factory.SubFactory(AgentFactory)
    tool = factory.SubFactory(ToolFactory)
    requested_tool_id = factory.LazyAttribute(lambda c: c.tool.tool_id if c.tool else "x")
    r_tag = factory.SubFactory(ReasonLogFactory, agent=factory.SelfAttribute("..agent"))
    o_tag = factory.LazyAttribute(lambda c: c.r_tag.o_tag if c.r_tag else None)
    input = factory.LazyFunction(lambda: {"q": "roster"})
    decision = m.ToolCall.Decision.EXECUTED
    seq = factory.Sequence(lambda n: n + 1)
    prev_hash = "0" * 64
    row_hash = factory.LazyAttribute(lambda c: hashlib.sha256(str(c.seq).encode()).hexdigest())


class AgentTaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.AgentTask

    agent = factory.SubFactory(AgentFactory)
    title = factory.Sequence(lambda n: f"Task {n}")


class ApprovalRequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.ApprovalRequest

    tool = factory.SubFactory(ToolFactory, risk_level=RiskLevel.WRITE, execution_mode="review")
    agent = factory.SubFactory(AgentFactory)
    arguments = factory.LazyFunction(lambda: {"q": "x"})
    arguments_hash = "0" * 64
    reason = "needs a human"
    summary = "Will do a thing"
    risk_level = RiskLevel.WRITE
    timeout_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=30))


class ContextBucketEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = m.ContextBucketEntry

    bucket = ContextBucket.TRANSPORTATION
    pattern_type = "recurring_issue"
    entity = factory.Sequence(lambda n: f"Vehicle {n}")
    observation = "Hoist sticks in the cold"
