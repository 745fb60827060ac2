"""Production: the same settings, hardened. Everything else comes from the environment."""

from __future__ import annotations

from .base import *  # noqa: F403
from .base import env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY")  # required: no default in production
# One checkpoint key for every host, given (RABS_CHECKPOINT_KEY or its file): never one per host.
RABS_CHECKPOINT_KEY_GENERATE = env.bool("RABS_CHECKPOINT_KEY_GENERATE", default=False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
# The agents' broker API is served on a port bound to the host's loopback (seed 000 §3; the proxy
# publishes it there only), in plain HTTP: no redirect to an https that port does not have. The
# reviewer API under /api/v1/review/ is the staff side's and redirects like the rest of it.
# /healthz and /healthz/web are asked by container health checks, load balancers and monitoring
# inside the network, in plain HTTP (they say only up or down).
SECURE_REDIRECT_EXEMPT = [r"^api/v1/(?!review/)", r"^healthz(/web)?$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
