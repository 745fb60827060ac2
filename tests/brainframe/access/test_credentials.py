"""`manage.py agent_key`: a signing secret shown once, stored encrypted, rotated on demand."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from brainframe.models import AgentCredential
from brainframe.services.access.credentials import agent_secret_get
from tests import factories as f

pytestmark = pytest.mark.django_db


def _issue(agent_id: str) -> str:
    out = StringIO()
    call_command("agent_key", agent_id, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_secret_is_printed_once_and_not_stored_in_plain_text() -> None:
    agent = f.AgentFactory(agent_id="henry")
    secret = _issue("henry")
    assert len(secret) == 64
    credential = AgentCredential.objects.get(agent=agent)
    assert secret not in credential.secret_encrypted
    assert secret.encode() not in credential.secret_encrypted.encode()
    key = agent_secret_get(agent_id="henry")
    assert key is not None and (key.agent, key.secret) == (agent, secret.encode())


def test_rotation_revokes_the_previous_secret() -> None:
    agent = f.AgentFactory(agent_id="reggie")
    first = _issue("reggie")
    second = _issue("reggie")
    assert first != second
    key = agent_secret_get(agent_id="reggie")
    assert key is not None and (key.agent, key.secret) == (agent, second.encode())
    assert AgentCredential.objects.filter(agent_id="reggie").count() == 2
    assert AgentCredential.objects.filter(agent_id="reggie", revoked_at__isnull=True).count() == 1


def test_secret_unreadable_under_another_key_fails_closed(settings: object) -> None:
    f.AgentFactory(agent_id="henry")
    _issue("henry")
    settings.RABS_SECRET_ENCRYPTION_KEY = "a-different-key"  # type: ignore[attr-defined]
    assert agent_secret_get(agent_id="henry") is None


def test_unknown_agent_is_a_clear_error() -> None:
    f.AgentFactory(agent_id="henry")
    with pytest.raises(CommandError, match=r"unknown agent 'nobody'.*henry"):
        call_command("agent_key", "nobody", stdout=StringIO())
