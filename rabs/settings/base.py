"""Settings for every environment, driven by environment variables (see ``.env.example``).

With no ``DATABASE_URL`` / ``REDIS_URL`` the embedded PostgreSQL + pgvector and Redis under
``var/`` are started (or reused) on import; see :mod:`rabs.stack.embedded`.
"""

from __future__ import annotations

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from rabs.stack.redis_urls import redis_urls

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# A fixed development key is only acceptable because production must set DJANGO_SECRET_KEY
# (rabs.settings.production refuses to start without it).
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="dev-insecure-rabs-brainframe-key-change-me")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# --- Services: real servers when configured, embedded ones otherwise ----------------------------
_database_url = env.str("DATABASE_URL", default="")
_redis_url = env.str("REDIS_URL", default="")
if not _database_url or not _redis_url:
    from rabs.stack.embedded import ensure_services

    _embedded = ensure_services()
    _database_url = _database_url or _embedded.database_url
    _redis_url = _redis_url or _embedded.redis_url

_db = environ.Env.db_url_config(_database_url)
_db["ENGINE"] = "rabs.postgres"  # Django's, with a cheaper pool check (rabs/postgres/base.py)
_db.setdefault("OPTIONS", {})
if "host" in _db["OPTIONS"]:  # a unix-socket URL (…?host=/path) names its socket dir here
    _db["HOST"] = _db["OPTIONS"].pop("host")
# psycopg's pool, not CONN_MAX_AGE: under daphne persistent connections piled up until
# PostgreSQL refused new ones, the pool did not.
_db["CONN_MAX_AGE"] = 0
# The pool checks a connection before handing it out: after a database restart no request
# gets a dead one (one short round trip per checkout).
_db["CONN_HEALTH_CHECKS"] = env.bool("DATABASE_HEALTH_CHECKS", default=True)
if env.bool("DATABASE_POOL", default=True):
    _db["OPTIONS"]["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN", default=1),
        "max_size": env.int("DATABASE_POOL_MAX", default=10),
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=10.0),
    }
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS = redis_urls(_redis_url)

# --- Applications ------------------------------------------------------------------------------
INSTALLED_APPS = [
    "daphne",
    "rabs.web.admin_site.RabsAdminConfig",  # django.contrib.admin, its index grouped by concept
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "channels",
    "simple_history",
    "brainframe",
    "broker",
    "dashboard",
]

MIDDLEWARE = [
    "rabs.web.middleware.ApiHostMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "rabs.web.middleware.ProcessHeaderMiddleware",
]

ROOT_URLCONF = "rabs.urls"
ASGI_APPLICATION = "rabs.asgi.application"
WSGI_APPLICATION = "rabs.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context_processors.open_approvals",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-au"
# Store UTC, show Brisbane time (AEST, no daylight saving): "nightly 02:00 AEST" means 02:00 here.
TIME_ZONE = env.str("TIME_ZONE", default="Australia/Brisbane")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "var" / "static")
STATICFILES_DIRS = [BASE_DIR / "static"]
Path(STATIC_ROOT).mkdir(parents=True, exist_ok=True)  # whitenoise expects it to exist
# The app serves its own static files (admin, htmx, API docs): no CDN, works offline.
WHITENOISE_USE_FINDERS = True
# The board's own sign-in: reviewers need not be staff (the admin's login admits staff only).
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/board/"
LOGOUT_REDIRECT_URL = "/accounts/login/"
# Sign-in of people (board and admin) is throttled per username and client (rabs/web/signin.py).
AUTHENTICATION_BACKENDS = ["rabs.web.signin.ThrottledModelBackend"]
RABS_SIGNIN_FAILURES = env.int("RABS_SIGNIN_FAILURES", default=5)
RABS_SIGNIN_LOCKOUT_SECONDS = env.int("RABS_SIGNIN_LOCKOUT_SECONDS", default=900)
# A header our own proxy sets to the client's address (e.g. X-Real-IP); empty: REMOTE_ADDR.
RABS_CLIENT_IP_HEADER = env.str("RABS_CLIENT_IP_HEADER", default="")
MEDIA_URL = "/media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", default=BASE_DIR / "var" / "media")

# --- Cache, channels, Celery: all on the one Redis ----------------------------------------------
CACHES = {
    "default": {
        "BACKEND": "rabs.web.cache.RedisCache",
        "LOCATION": REDIS.cache,
        "KEY_PREFIX": "rabs",
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # capacity: events a board may fall behind by before the layer drops them (default
        # 100 lost rows at high call rates).
        "CONFIG": {"hosts": [REDIS.channels], "prefix": "rabs:channels", "capacity": 1000},
    }
}
CELERY_BROKER_URL = REDIS.celery
CELERY_RESULT_BACKEND = REDIS.celery
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- API ---------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON everywhere; the deliverables upload alone takes multipart.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "broker.api.exceptions.api_exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RABS Brainframe Tools Broker API",
    "DESCRIPTION": "The only way an agent acts on the business: tools, tool calls, tasks.",
    "VERSION": "1.0.0",
    # Served by the app itself (drf-spectacular-sidecar): the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "ContextBucketEnum": "brainframe.choices.ContextBucket",
        "HookKindEnum": "brainframe.models.hooks.Hook.Kind",
        "HookStatusEnum": "brainframe.models.hooks.Hook.Status",
    },
    # A non-blank text field says so (minLength 1), as the serializers enforce.
    "ENFORCE_NON_BLANK_FIELDS": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "broker.api.schema.document_errors",
        "broker.api.schema.declare_links",
    ],
}

# --- Brainframe --------------------------------------------------------------------------------
# Key that encrypts agent signing secrets at rest. Defaults to one derived from SECRET_KEY.
RABS_SECRET_ENCRYPTION_KEY = env.str("RABS_SECRET_ENCRYPTION_KEY", default="")
# Minutes before a pending approval expires, unless the tool sets its own.
RABS_APPROVAL_TIMEOUT_MINUTES = env.int("RABS_APPROVAL_TIMEOUT_MINUTES", default=30)

# The council (docs/council.md): seats, how long a vote lasts, how many must vote (quorum) and
# vote yes (threshold), as shares of the members seated when the proposal opened.
RABS_COUNCIL_MAX_MEMBERS = env.int("RABS_COUNCIL_MAX_MEMBERS", default=15)
RABS_COUNCIL_VOTE_HOURS = env.float("RABS_COUNCIL_VOTE_HOURS", default=72.0)
RABS_COUNCIL_QUORUM = env.float("RABS_COUNCIL_QUORUM", default=0.6)
RABS_COUNCIL_THRESHOLD = env.float("RABS_COUNCIL_THRESHOLD", default=0.6)
# What a proposed rule would have decided: replayed on this many recent calls at most.
RABS_COUNCIL_WHAT_IF_DAYS = env.int("RABS_COUNCIL_WHAT_IF_DAYS", default=30)
RABS_COUNCIL_WHAT_IF_CALLS = env.int("RABS_COUNCIL_WHAT_IF_CALLS", default=5000)
# Standing approvals ("this and calls like it for N hours"): the longest a reviewer may give.
RABS_STANDING_APPROVAL_MAX_HOURS = env.float("RABS_STANDING_APPROVAL_MAX_HOURS", default=72.0)
# Hooks (docs/hooks.md): kinds that go live without staff review when their effects only wake
# the agent or queue a message for it (hooks that invoke tools always wait for staff); failures
# in a row before a hook is disabled.
RABS_HOOKS_AUTO_APPROVE = env.list(
    "RABS_HOOKS_AUTO_APPROVE", default=["deterministic", "scheduled"]
)
RABS_HOOK_MAX_ERRORS = env.int("RABS_HOOK_MAX_ERRORS", default=3)
# Conversations (docs/ledgers.md): what a message arriving mid-turn does when neither its
# session nor its agent says (steer, followup, collect, interrupt), and how deep managers may
# delegate to workers who delegate in turn.
RABS_QUEUE_MODE = env.str("RABS_QUEUE_MODE", default="followup")
RABS_DELEGATION_MAX_DEPTH = env.int("RABS_DELEGATION_MAX_DEPTH", default=3)
# Sequence rules with ``scope: session`` (docs/access.md): the agent's own calls in any chain over
# this many minutes count with the chain's.
RABS_SEQUENCE_SESSION_MINUTES = env.int("RABS_SEQUENCE_SESSION_MINUTES", default=240)
# Temporary grants (docs/access.md, "Temporary grants"): every grant ends. Asked without hours:
# this many; asked or approved for more: at most this many.
RABS_GRANT_DEFAULT_HOURS = env.float("RABS_GRANT_DEFAULT_HOURS", default=8.0)
RABS_GRANT_MAX_HOURS = env.float("RABS_GRANT_MAX_HOURS", default=72.0)
# Model budgets (docs/llm-gateway.md): what a request that names no max_tokens may write, for
# the worst-case cost reserved against a budget while it runs.
RABS_LLM_DEFAULT_MAX_OUTPUT_TOKENS = env.int("RABS_LLM_DEFAULT_MAX_OUTPUT_TOKENS", default=4096)
# Channels both ways (docs/channels.md): an SMS answer is cut to this many segments, with this
# marker; a reply is tried this many times, the first retry after RETRY seconds, doubling;
# each attempt waits at most SEND_TIMEOUT seconds for the provider.
RABS_SMS_MAX_SEGMENTS = env.int("RABS_SMS_MAX_SEGMENTS", default=3)
RABS_SMS_TRUNCATION_MARKER = env.str("RABS_SMS_TRUNCATION_MARKER", default=" (cut short)")
RABS_REPLY_MAX_ATTEMPTS = env.int("RABS_REPLY_MAX_ATTEMPTS", default=6)
RABS_REPLY_RETRY_SECONDS = env.float("RABS_REPLY_RETRY_SECONDS", default=15.0)
RABS_REPLY_SEND_TIMEOUT_SECONDS = env.float("RABS_REPLY_SEND_TIMEOUT_SECONDS", default=10.0)
# The Matrix homeserver chat lives in (docs/channels.md): `make run` starts an embedded one and
# sets these; or name an existing one, with the tokens of the registration installed there.
RABS_MATRIX_URL = env.str("RABS_MATRIX_URL", default="")
RABS_MATRIX_SERVER_NAME = env.str("RABS_MATRIX_SERVER_NAME", default="rabs.local")
RABS_MATRIX_AS_TOKEN = env.str("RABS_MATRIX_AS_TOKEN", default="")
RABS_MATRIX_HS_TOKEN = env.str("RABS_MATRIX_HS_TOKEN", default="")
# Yielding the turn (docs/channels.md): the longest loop.yield_turn sleeps, and how many tool
# calls an agent may make with no new input before the loop latch stops it (0: no latch).
RABS_LOOP_YIELD_MAX_SECONDS = env.float("RABS_LOOP_YIELD_MAX_SECONDS", default=120.0)
RABS_LOOP_LATCH_CALLS = env.int("RABS_LOOP_LATCH_CALLS", default=200)
# Proposed rules (docs/access.md): a pattern seen in this many rejections or refusals in 30 days.
RABS_RULE_PROPOSAL_MIN = env.int("RABS_RULE_PROPOSAL_MIN", default=5)
# OpenTelemetry (docs/events.md): OTLP/HTTP export of decision and execution spans and counters
# to this collector (e.g. http://127.0.0.1:4318); empty: off.
RABS_OTEL_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
RABS_OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", default="rabs-brainframe")
# Agent request signing: how far a request's timestamp may be from the server's clock.
RABS_SIGNATURE_WINDOW_SECONDS = env.int("RABS_SIGNATURE_WINDOW_SECONDS", default=300)
# Requests per agent on the agent API (DRF rate syntax); over it the agent gets 429.
RABS_AGENT_RATE = env.str("RABS_AGENT_RATE", default="1200/min")
# Largest request body the agent API reads (deliverables have their own limit).
RABS_MAX_BODY_BYTES = env.int("RABS_MAX_BODY_BYTES", default=256 * 1024)
# Threads per web process serving HTTP (rabs.web.http). Python runs one thread at a time, so a few
# are enough to overlap database and Redis waits; more only contend (bench/broker_load.py: p99 at
# 100/s 13-17 ms with 4, 17-30 ms with 10). At most the database pool's size.
RABS_HTTP_THREADS = env.int("RABS_HTTP_THREADS", default=4)
# The MCP face (/mcp): how long a tools/call that needs a reviewer is held open for a decision
# before it answers "pending approval"; threads per web process doing its database work.
# How long an MCP tools/call that needs a reviewer is held before it answers "pending": with a
# progressToken (progress sent meanwhile) and without one (agent frameworks time a request out
# after 5 s: at most 4 s); a client may ask for up to RABS_MCP_MAX_HOLD_SECONDS (docs/mcp.md).
RABS_MCP_APPROVAL_WAIT_SECONDS = env.float("RABS_MCP_APPROVAL_WAIT_SECONDS", default=20.0)
RABS_MCP_HOLD_SECONDS = env.float("RABS_MCP_HOLD_SECONDS", default=3.0)
if not 0 <= RABS_MCP_HOLD_SECONDS <= 4:
    raise ImproperlyConfigured("RABS_MCP_HOLD_SECONDS is 0-4 (clients time out after 5 s)")
RABS_MCP_MAX_HOLD_SECONDS = env.float("RABS_MCP_MAX_HOLD_SECONDS", default=120.0)
RABS_MCP_PROGRESS_SECONDS = env.float("RABS_MCP_PROGRESS_SECONDS", default=2.0)
# How long a subscribed external agent's receiver has to answer a pushed event (then retried).
RABS_WEBHOOK_TIMEOUT_SECONDS = env.float("RABS_WEBHOOK_TIMEOUT_SECONDS", default=5.0)
RABS_MCP_TOOLS_PAGE_SIZE = env.int("RABS_MCP_TOOLS_PAGE_SIZE", default=500)
# An MCP session's record (its log level and subscriptions) lasts this long after its last use.
RABS_MCP_SESSION_SECONDS = env.int("RABS_MCP_SESSION_SECONDS", default=86400)
RABS_MCP_THREADS = env.int("RABS_MCP_THREADS", default=4)
RABS_DELIVERABLE_MAX_BYTES = env.int("RABS_DELIVERABLE_MAX_BYTES", default=10 * 1024 * 1024)
# Accepted deliverable file types: extension → content type stored.
RABS_DELIVERABLE_TYPES = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "txt": "text/plain",
    "md": "text/markdown",
    "json": "application/json",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "png": "image/png",
    "jpg": "image/jpeg",
}
DATA_UPLOAD_MAX_MEMORY_SIZE = RABS_DELIVERABLE_MAX_BYTES + 1024 * 1024
# The web processes answer 413 to any larger request body before reading it (rabs.web.http).
RABS_HTTP_MAX_BODY_BYTES = env.int("RABS_HTTP_MAX_BODY_BYTES", default=DATA_UPLOAD_MAX_MEMORY_SIZE)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# The gate's sampling rates: share of level-1 calls held for approval before execution, and
# share of level-3 calls that get a spot-check item after execution.
RABS_PRE_EXEC_SAMPLE_RATE = env.float("RABS_PRE_EXEC_SAMPLE_RATE", default=0.25)
RABS_SPOT_CHECK_RATE = env.float("RABS_SPOT_CHECK_RATE", default=0.10)
# Handlers: default timeout, the directory script handlers are confined to, and an optional
# separate (least-privilege) database role for sql handlers.
RABS_HANDLER_TIMEOUT_SECONDS = env.float("RABS_HANDLER_TIMEOUT_SECONDS", default=10.0)
RABS_SCRIPT_ROOT = env.path("RABS_SCRIPT_ROOT", default=BASE_DIR / "var" / "scripts")
# The OS sandbox of script handlers (broker.handlers.sandbox): the programs that build it, the
# unprivileged user scripts run as, and the interpreter "python" names in a script's argv (by
# default the base interpreter of this one, never the project's virtualenv).
RABS_SANDBOX = {
    "bwrap": env.str("RABS_SANDBOX_BWRAP", default="/usr/bin/bwrap"),
    "setpriv": env.str("RABS_SANDBOX_SETPRIV", default="/usr/bin/setpriv"),
    "prlimit": env.str("RABS_SANDBOX_PRLIMIT", default="/usr/bin/prlimit"),
    "uid": env.int("RABS_SANDBOX_UID", default=65534),
    "gid": env.int("RABS_SANDBOX_GID", default=65534),
    # Landlock, the second layer where the kernel has it (built by make install; "" turns it off).
    "landlock": env.str(
        "RABS_SANDBOX_LANDLOCK", default=str(BASE_DIR / "var" / "bin" / "rabs-landlock")
    ),
}
RABS_SANDBOX_PYTHON = env.str("RABS_SANDBOX_PYTHON", default="")
# The script sandbox's seccomp filter (the kernel calls a script may not make, built once at
# install into this file by `python broker/handlers/seccomp.py`; "" turns the layer off).
RABS_SANDBOX_SECCOMP = env.str(
    "RABS_SANDBOX_SECCOMP", default=str(BASE_DIR / "var" / "bin" / "rabs-seccomp.bpf")
)
# Signed checkpoints of the chains' heads (broker.audit.checkpoints, docs/architecture.md
# "Evidence"): the deployment's Ed25519 key (PEM text, or a file of mode 600, generated on first
# use where RABS_CHECKPOINT_KEY_GENERATE allows), retired public keys, outside witnesses
# (file:///dir, http(s)://…, syslog://host:port, syslog:///dev/log), and how old the last
# checkpoint may be before `manage.py check` warns.
RABS_CHECKPOINT_KEY = env.str("RABS_CHECKPOINT_KEY", default="")
RABS_CHECKPOINT_KEY_FILE = env.path(
    "RABS_CHECKPOINT_KEY_FILE", default=BASE_DIR / "var" / "checkpoint-key.pem"
)
RABS_CHECKPOINT_KEYS_DIR = env.path(
    "RABS_CHECKPOINT_KEYS_DIR", default=BASE_DIR / "var" / "checkpoint-keys"
)
RABS_CHECKPOINT_KEY_GENERATE = env.bool("RABS_CHECKPOINT_KEY_GENERATE", default=True)
RABS_CHECKPOINT_WITNESS = env.list("RABS_CHECKPOINT_WITNESS", default=[])
RABS_CHECKPOINT_MAX_AGE_MINUTES = env.int("RABS_CHECKPOINT_MAX_AGE_MINUTES", default=10)
# Agents' supervisors are reached on loopback only (constitution LOOPBACK_ONLY), or on these
# hosts: the gate's control lane in the compose deployment (docker/compose.yaml sets "gate").
RABS_CONTROL_GATE_HOSTS = env.list("RABS_CONTROL_GATE_HOSTS", default=[])
# The model gateway (/llm/v1): how long an upstream may take to answer (streams: between chunks).
RABS_LLM_UPSTREAM_TIMEOUT_SECONDS = env.float("RABS_LLM_UPSTREAM_TIMEOUT_SECONDS", default=120.0)
# /metrics (Prometheus text): staff sessions, or this bearer token for a scraper ("" = staff only).
RABS_METRICS_TOKEN = env.str("RABS_METRICS_TOKEN", default="")
RABS_SQL_HANDLER_DATABASE_URL = env.str("RABS_SQL_HANDLER_DATABASE_URL", default="")
# Super Reggie's read replica (docs/agents.md): a streaming standby, reached as the read-only
# role that sees only the replica schema's exposed views. `make run` starts one of the embedded
# server and sets this; unset: db.replica.query fails ("no read replica") and the board says so.
RABS_REPLICA_URL = env.str("RABS_REPLICA_URL", default="")
RABS_REPLICA_ROLE = env.str("RABS_REPLICA_ROLE", default="rabs_replica_reader")
RABS_REPLICA_ROW_CAP = env.int("RABS_REPLICA_ROW_CAP", default=200)
RABS_REPLICA_TIMEOUT_MS = env.int("RABS_REPLICA_TIMEOUT_MS", default=3000)
# Graduation needs at least this many rated calls in the 30-day window (no promotion on a
# handful of lucky calls).
RABS_GRADUATION_MIN_VOLUME = env.int("RABS_GRADUATION_MIN_VOLUME", default=20)
# The nightly decay runs as this many concurrent UPDATEs over ranges of the table's pages
# (PostgreSQL runs one statement on one core).
RABS_DECAY_SLICES = env.int("RABS_DECAY_SLICES", default=2)
# Notifications about approvals: sender address, the base URL used in links, and an optional
# webhook (JSON POST, signed with the secret) called on new, escalated and expired items.
RABS_NOTIFY_FROM_EMAIL = env.str("RABS_NOTIFY_FROM_EMAIL", default="brainframe@rabs.local")
RABS_PUBLIC_URL = env.str("RABS_PUBLIC_URL", default="http://127.0.0.1:8000")
RABS_APPROVAL_WEBHOOK_URL = env.str("RABS_APPROVAL_WEBHOOK_URL", default="")
RABS_APPROVAL_WEBHOOK_SECRET = env.str("RABS_APPROVAL_WEBHOOK_SECRET", default="")
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
# Embeddings (768-d). "local": the offline sentence model under var/models (loaded once per
# process, never downloaded); "openai": any OpenAI-compatible /embeddings endpoint, asked for
# dimensions=768.
RABS_EMBEDDING_BACKEND = env.str("RABS_EMBEDDING_BACKEND", default="local")
RABS_EMBEDDING_MODEL_PATH = env.path(
    "RABS_EMBEDDING_MODEL_PATH", default=BASE_DIR / "var" / "models" / "all-mpnet-base-v2"
)
RABS_EMBEDDING_BASE_URL = env.str("RABS_EMBEDDING_BASE_URL", default="")
RABS_EMBEDDING_API_KEY = env.str("RABS_EMBEDDING_API_KEY", default="")
RABS_EMBEDDING_MODEL = env.str("RABS_EMBEDDING_MODEL", default="text-embedding-3-small")
RABS_EMBEDDING_BATCH_SIZE = env.int("RABS_EMBEDDING_BATCH_SIZE", default=32)
# The LLM endpoint of the Type 1 native helpers (triage, classification, summaries): any
# OpenAI-compatible server. Unset: native calls fail closed with a clear error.
RABS_LLM_BASE_URL = env.str("RABS_LLM_BASE_URL", default="")
RABS_LLM_API_KEY = env.str("RABS_LLM_API_KEY", default="")
RABS_NATIVE_MODEL = env.str("RABS_NATIVE_MODEL", default="gpt-4o-mini")
RABS_LLM_TIMEOUT_SECONDS = env.float("RABS_LLM_TIMEOUT_SECONDS", default=30.0)
# Queue embedding and bucket classification (Celery) when rows commit. The periodic sweep
# catches anything a failed enqueue left behind.
RABS_INDEX_ON_COMMIT = env.bool("RABS_INDEX_ON_COMMIT", default=True)
# A bare one-INSERT endpoint at /bench/insert/ for bench/broker_load.py (never in a deployment).
RABS_BENCH_ENDPOINTS = env.bool("RABS_BENCH_ENDPOINTS", default=False)
# Answer with X-RABS-Process: <pid> (the multi-process checks; off in a deployment).
RABS_PROCESS_HEADER = env.bool("RABS_PROCESS_HEADER", default=False)
# Observations whose current_score fell below this stop surfacing to agents (not deleted).
RABS_MIN_SURFACING_SCORE = env.float("RABS_MIN_SURFACING_SCORE", default=0.05)
# File where `manage.py ensure_admin` keeps the generated admin login for `make run` to print.
RABS_ADMIN_CREDENTIALS_FILE = env.path(
    "RABS_ADMIN_CREDENTIALS_FILE", default=BASE_DIR / "var" / "admin-credentials.json"
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
