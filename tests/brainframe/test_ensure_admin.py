from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_admin_is_created_once_and_its_login_printed(settings: object, tmp_path: Path) -> None:
    path = tmp_path / "admin.json"
    settings.RABS_ADMIN_CREDENTIALS_FILE = path  # type: ignore[attr-defined]
    out = StringIO()
    call_command("ensure_admin", stdout=out)
    login = json.loads(path.read_text())
    assert f"admin / {login['password']}" in out.getvalue()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(login["password"])

    again = StringIO()
    call_command("ensure_admin", stdout=again)
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
    assert login["password"] in again.getvalue()
