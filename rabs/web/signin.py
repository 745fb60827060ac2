"""Sign-in for people (the board's and the admin's): a password guesser is stopped.

``RABS_SIGNIN_FAILURES`` failed sign-ins (default 5) for one username from one client address
lock that pair for ``RABS_SIGNIN_LOCKOUT_SECONDS`` (default 900) from the first failure: even
the right password is refused until then, with a message saying so and for how long. Another
address is not locked (a guesser cannot lock a colleague out from elsewhere); a successful
sign-in clears the count. The counters live in Redis, shared by every web process; if Redis
cannot be reached, sign-in is refused (fail closed) rather than left unthrottled.

The client address is ``REMOTE_ADDR``, or the header named by ``RABS_CLIENT_IP_HEADER`` when a
proxy of ours sets it (the compose deployment's nginx sets ``X-Real-IP``, overwriting any the
client sent).
"""

from __future__ import annotations

import hashlib
from typing import Any, NoReturn

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from redis.exceptions import RedisError


def client_address(request: HttpRequest) -> str:
    header = settings.RABS_CLIENT_IP_HEADER
    if header:
        forwarded = request.headers.get(header, "").strip()
        if forwarded:
            return forwarded
    return str(request.META.get("REMOTE_ADDR", ""))


def _key(request: HttpRequest, username: str) -> str:
    who = f"{username.strip().lower()}\n{client_address(request)}"
    return cache.make_key(f"signin:{hashlib.sha256(who.encode()).hexdigest()}")


class ThrottledModelBackend(ModelBackend):
    """Django's username/password check behind the failure count. Without a request (a
    management command, the test client's ``login``) there is no one to throttle."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None or not username:
            return super().authenticate(request, username=username, password=password, **kwargs)
        key = _key(request, username)
        client = cache.redis()  # type: ignore[attr-defined]  # rabs.web.cache.RedisCache
        try:
            failures, ttl = client.pipeline(transaction=False).get(key).ttl(key).execute()
        except RedisError as exc:
            _refuse(request, "unavailable", 0, exc)
        if int(failures or 0) >= settings.RABS_SIGNIN_FAILURES:
            _refuse(request, "locked", max(int(ttl), 1))
        user = super().authenticate(request, username=username, password=password, **kwargs)
        try:
            if user is None:
                window = settings.RABS_SIGNIN_LOCKOUT_SECONDS
                client.pipeline(transaction=False).set(key, 0, ex=window, nx=True).incr(
                    key
                ).execute()
            else:
                client.delete(key)
        except RedisError as exc:  # the count cannot be kept: refuse rather than not count
            _refuse(request, "unavailable", 0, exc)
        return user


def _refuse(
    request: HttpRequest, why: str, seconds: int, cause: Exception | None = None
) -> NoReturn:
    """Refuse the sign-in (no other backend is asked); the form says why."""
    request.signin_refused = (why, seconds)  # type: ignore[attr-defined]
    raise PermissionDenied from cause


class _RefusalMessages(AuthenticationForm):
    """Says why a sign-in was refused when it was not the password: locked, or no counter."""

    def get_invalid_login_error(self) -> forms.ValidationError:
        refused = getattr(self.request, "signin_refused", None)
        if refused is None:
            return super().get_invalid_login_error()
        why, seconds = refused
        if why == "locked":
            minutes = -(-seconds // 60)
            return forms.ValidationError(
                f"Too many failed sign-ins for this account from here. Try again in {minutes} "
                f"minute{'s' if minutes != 1 else ''}.",
                code="signin_locked",
            )
        return forms.ValidationError(
            "Sign-in is unavailable right now (its rate limiter cannot be reached). "
            "Try again shortly.",
            code="signin_unavailable",
        )


class SignInForm(_RefusalMessages, AuthenticationForm):
    """The board's sign-in form."""


class AdminSignInForm(_RefusalMessages, AdminAuthenticationForm):
    """The admin's sign-in form (staff only, as Django's)."""
