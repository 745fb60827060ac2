"""Sign-in of people, board and admin: a password guesser is locked out per username and client
address, with a message saying so; other addresses and correct sign-ins are unaffected; no
counter store, no sign-in."""

from __future__ import annotations

import copy

import pytest
from django.conf import settings
from django.test import Client, override_settings

from rabs.stack.devstack import free_port
from tests import factories as f

pytestmark = pytest.mark.django_db
PASSWORD = "pw-for-tests"


def _sign_in(client: Client, username: str, password: str, *, admin: bool = False) -> str:
    """The page's error text, or "" when the sign-in succeeded."""
    url = "/admin/login/" if admin else "/accounts/login/"
    response = client.post(url, {"username": username, "password": password})
    if response.status_code == 302:
        return ""
    assert response.status_code == 200
    errors = response.context["form"].non_field_errors()
    return " ".join(errors)


@pytest.mark.parametrize("admin", [False, True], ids=["board", "admin"])
def test_five_failures_lock_that_username_from_that_address(admin: bool) -> None:
    f.UserFactory(username=f"rita-{admin}", is_staff=True)
    rita, here, elsewhere = f"rita-{admin}", Client(), Client(REMOTE_ADDR="10.9.8.7")
    for _ in range(settings.RABS_SIGNIN_FAILURES):
        assert "correct username and password" in _sign_in(here, rita, "guess", admin=admin)
    locked = _sign_in(here, rita, PASSWORD, admin=admin)
    assert locked == "Too many failed sign-ins for this account from here. Try again in 15 minutes."
    assert "_auth_user_id" not in here.session
    # A guesser cannot lock a colleague out from elsewhere.
    assert _sign_in(elsewhere, rita, PASSWORD, admin=admin) == ""


def test_a_correct_sign_in_clears_the_count() -> None:
    f.UserFactory(username="sam")
    client = Client()
    for _ in range(settings.RABS_SIGNIN_FAILURES - 1):
        assert _sign_in(client, "sam", "guess")
    assert _sign_in(client, "sam", PASSWORD) == ""
    client.logout()
    for _ in range(settings.RABS_SIGNIN_FAILURES - 1):
        assert _sign_in(client, "sam", "guess")
    assert _sign_in(client, "sam", PASSWORD) == ""


@override_settings(RABS_CLIENT_IP_HEADER="X-Real-IP")
def test_the_address_our_proxy_names_is_the_one_counted() -> None:
    f.UserFactory(username="tom")
    proxy_a = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="203.0.113.7")
    proxy_b = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="198.51.100.20")
    for _ in range(settings.RABS_SIGNIN_FAILURES):
        _sign_in(proxy_a, "tom", "guess")
    assert "Too many failed sign-ins" in _sign_in(proxy_a, "tom", PASSWORD)
    assert _sign_in(proxy_b, "tom", PASSWORD) == ""


def test_no_counter_store_means_no_sign_in() -> None:
    f.UserFactory(username="una")
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens
    with override_settings(CACHES=caches):
        refused = _sign_in(Client(), "una", PASSWORD)
    assert refused.startswith("Sign-in is unavailable right now")
    assert _sign_in(Client(), "una", PASSWORD) == ""  # and back once it is
