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


def test_reset_issues_a_new_password_when_the_old_one_is_lost(
    settings: object, tmp_path: Path
) -> None:
    path = tmp_path / "admin.json"
    settings.RABS_ADMIN_CREDENTIALS_FILE = path  # type: ignore[attr-defined]
    user = get_user_model().objects.create_superuser("admin", "a@rabs.test", "forgotten-pw")
    lost = StringIO()
    call_command("ensure_admin", stdout=lost)
    assert "--reset" in lost.getvalue() and not path.exists()

    out = StringIO()
    call_command("ensure_admin", "--reset", stdout=out)
    login = json.loads(path.read_text())
    assert login["username"] == "admin" and f"admin / {login['password']}" in out.getvalue()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    user.refresh_from_db()
    assert user.check_password(login["password"]) and not user.check_password("forgotten-pw")
    again = StringIO()
    call_command("ensure_admin", stdout=again)  # make run prints the new one from now on
    assert login["password"] in again.getvalue()


def test_reset_names_the_superuser_when_it_is_not_obvious(settings: object, tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    settings.RABS_ADMIN_CREDENTIALS_FILE = tmp_path / "admin.json"  # type: ignore[attr-defined]
    with pytest.raises(CommandError, match="no superuser yet"):
        call_command("ensure_admin", "--reset", stdout=StringIO())
    get_user_model().objects.create_superuser("ann", "ann@rabs.test", "x")
    get_user_model().objects.create_superuser("ben", "ben@rabs.test", "x")
    with pytest.raises(CommandError, match="--username"):
        call_command("ensure_admin", "--reset", stdout=StringIO())
    call_command("ensure_admin", "--reset", "--username", "ben", stdout=StringIO())
    assert not get_user_model().objects.get(username="ben").check_password("x")
