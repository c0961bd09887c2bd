"""Django settings. Everything that differs between machines comes from the environment (see twin/env.py)."""
import os
from pathlib import Path

from twin import env

BASE_DIR = env.BASE_DIR
# The twin's version, as pyproject.toml declares it: what a download (CSV, JSON, PNG) says made it.
TWIN_VERSION = env.project_version()
SECRET_KEY = env.secret_key()
# Off by default: with DEBUG on, anyone who reaches the port (any user of a shared machine reaches 127.0.0.1) gets
# tracebacks with the settings in them. Errors are logged on the console either way.
DEBUG = env.env_bool("DEBUG", False)
ALLOWED_HOSTS = env.env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env.env_list("CSRF_TRUSTED_ORIGINS", "")

# HTTPS behind a TLS proxy (docs/operations.md): TWIN_HTTPS=true trusts the proxy's X-Forwarded-Proto, redirects
# plain HTTP (but /healthz, which health checks ask from inside the network), and sets secure cookies and HSTS, as
# `manage.py check --deploy` asks.
TWIN_HTTPS = env.env_bool("TWIN_HTTPS", False)
if TWIN_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.env_int("TWIN_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.env_bool("TWIN_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env.env_bool("TWIN_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Asking browsers to preload the domain is the domain owner's decision, not the twin's default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "twin.inventory",
    "twin.api",
    "twin.runs",
    "twin.web",
    "twin.live",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "twin.api.logins.LoginThrottleMiddleware",
]

ROOT_URLCONF = "twin.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "twin.web.context.navigation",
            ],
        },
    },
]
ASGI_APPLICATION = "twin.asgi.application"
WSGI_APPLICATION = "twin.wsgi.application"

DATABASES = {"default": env.database()}
# PostgreSQL connections from a pool of this many per process (Django's psycopg pool), instead of a new connection
# per request (about 4 ms and a server process each). 0: no pool. The web processes of `python -m twin.webserver`
# (compose) default to twin.webserver.DB_POOL_DEFAULT; 0 for everything else (tests, daphne, Celery's forked pool).
TWIN_DB_POOL_SIZE = env.env_int("TWIN_DB_POOL_SIZE", 0, minimum=0)
if TWIN_DB_POOL_SIZE and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 1, "max_size": TWIN_DB_POOL_SIZE, "timeout": 30}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "frontend"]
# Capability packages beyond twin/capabilities (twin/discovery.py, docs/architecture.md)
TWIN_EXTRA_CAPABILITIES = env.env_packages("TWIN_EXTRA_CAPABILITIES")
# frontend/ and each capability package's own static/ folder (twin/web/static_finder.py)
STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder",
                       "django.contrib.staticfiles.finders.AppDirectoriesFinder",
                       "twin.web.static_finder.CapabilityFinder"]
STATIC_ROOT = env.VAR_DIR / "static"

REDIS_URL = env.redis_url()
# Seconds a Redis read may wait. channels_redis blocks in BRPOP for 5 s per receive; redis-py's default socket timeout
# is also 5 s, so an idle WebSocket's read timed out first and the socket was closed with 1011 every 5-6 s. The read
# timeout must stay well above the BRPOP timeout.
TWIN_REDIS_SOCKET_TIMEOUT = 30.0
# Redis keys of the live push: the snapshots, and the channel layer's groups and channels (its "prefix"); several
# twins (or test sessions) sharing one Redis each take their own, or a frame of one's run 1 reaches the other's.
TWIN_LIVE_KEY_PREFIX = os.environ.get("TWIN_LIVE_KEY_PREFIX") or "twin:live:"
# Live push (twin/live): frames are small (a 56k-link Uint8 frame is 56 KB) and few (the tick); a client that falls
# more than `capacity` frames behind loses frames and resyncs from the REST snapshot (sequence numbers show the gap).
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": TWIN_REDIS_SOCKET_TIMEOUT}],
                   "capacity": 100, "expiry": 10, "group_expiry": 86400, "prefix": TWIN_LIVE_KEY_PREFIX + "asgi"},
    },
}
TWIN_LIVE_TICK_HZ = 4.0   # frames per second per run at most (RunPublisher.progress)
# The longest wait of a page between two tries to reopen a dropped live socket (frames.js: 0.5 s doubling up to it).
# 5 s keeps a restarted server from a burst of every page's tries; the test servers set 1 s (a restart there is a
# test's outage, waited for).
TWIN_LIVE_RETRY_MAX_MS = env.env_int("TWIN_LIVE_RETRY_MAX_MS", 5000, minimum=500)
TWIN_LIVE_SNAPSHOT_TTL = 7 * 24 * 3600

# Celery: one app (twin/celery.py), settings under the CELERY_ namespace.
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 55 * 60
# django-celery-beat's database scheduler that skips rows Celery cannot read and runs the runs sweeper itself.
CELERY_BEAT_SCHEDULER = "twin.runs.beat:Scheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Queue of the run tasks; tests give each session its own so that no stray worker takes their tasks.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("TWIN_CELERY_QUEUE") or "celery"
# The runs sweeper runs in beat's process (twin/runs/beat.py): runs whose worker stopped sending heartbeats are
# requeued once, then failed; queued runs whose broker message is gone are sent again. Other runs limits and their
# defaults: twin/runs/constants.py DEFAULTS (docs/operations.md, "Runs: limits and faults").
TWIN_RUNS_STALE_SECONDS = env.env_int("TWIN_RUNS_STALE_SECONDS", 30, minimum=1)  # heartbeats come every 5 s
TWIN_RUNS_MAX_ATTEMPTS = 2
TWIN_RUNS_SOFT_TIME_LIMIT = 50 * 60
TWIN_RUNS_TIME_LIMIT = 55 * 60
# Files a run keeps beside its rows (a debug rehearsal's flight-recorder dumps, twin/runs/files.py): one directory
# per run, private (0700/0600), deleted with the run. Workers write them, the web processes stream them: both must
# see this directory (compose: the runfiles volume).
TWIN_RUN_FILES_DIR = Path(os.environ.get("TWIN_RUN_FILES_DIR") or env.VAR_DIR / "run-files")
# What the pages derive from a large cluster's structure (zone arrays, fingerprints, a zone's or building's page
# structure; twin/inventory/structure_cache.py), kept on disk per web host so that a web process that starts reads
# it in milliseconds instead of seconds; safe to delete at any time (rebuilt on the next visit).
TWIN_STRUCTURE_CACHE_DIR = Path(os.environ.get("TWIN_STRUCTURE_CACHE_DIR") or env.VAR_DIR / "structure-cache")
# Whether each web process warms those in a background thread from its start (twin/web/warm.py).
TWIN_WARM_STRUCTURES = env.env_bool("TWIN_WARM_STRUCTURES", True)

# The web processes (twin/webserver.py): TWIN_WEB_WORKERS processes per web service (compose: the CPU count, at most
# 8; scripts/run: 1, daphne) and TWIN_WEB_THREADS threads per HTTP process, read from the environment by the server
# command, before Django starts.
# Whole-fabric exports (JSON graph, DOT; twin/inventory/exports.py) kept rendered per web process, for this many
# fabrics per format, as is and gzipped (a 24k fabric: graph 12 MB + 0.8 MB, DOT 4.5 MB + 0.3 MB).
TWIN_EXPORT_CACHE_FABRICS = 4

# REST API (twin/api): token auth for scripts, sessions for the browser; reads open unless turned off.
TWIN_API_ANONYMOUS_READ = env.env_bool("TWIN_API_ANONYMOUS_READ", True)
# Who may download a run's dumps archive (GET /api/runs/<id>/dumps/: flight-recorder files, what users copy off
# production clusters): "authenticated" (any signed-in user), "anyone" (reads open as the rest), "owner" (the run's
# owner and runs.manage_any_run holders).
TWIN_DUMPS_ACCESS = env.env_choice("TWIN_DUMPS_ACCESS", "authenticated", ("authenticated", "anyone", "owner"))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "twin.api.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["twin.api.permissions.InventoryPermission"],
    "DEFAULT_PAGINATION_CLASS": "twin.api.pagination.TwinPagination",
    "DEFAULT_FILTER_BACKENDS": [
        "twin.api.filters.FilterBackend",
        "twin.api.filters.OrderingFilter",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "twin.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_THROTTLE_CLASSES": [
        "twin.api.throttling.AnonRateThrottle",
        "twin.api.throttling.UserRateThrottle",
    ],
    # Proxies in front of the twin (the compose set-up's Caddy: 1) whose X-Forwarded-For gives the client address
    # that rate limits and login failures count by; 0 trusts no header (REMOTE_ADDR).
    "NUM_PROXIES": env.env_int("TWIN_NUM_PROXIES", 0, minimum=0),
    "DEFAULT_SCHEMA_CLASS": "twin.api.schema.TwinAutoSchema",
    "EXCEPTION_HANDLER": "twin.api.exceptions.api_exception_handler",
    "DEFAULT_METADATA_CLASS": "twin.api.metadata.Metadata",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
# API limits (docs/operations.md "API: limits, tokens and throttling"). Request bodies over
# DATA_UPLOAD_MAX_MEMORY_SIZE bytes are refused (413 on the API); JSON nested deeper than TWIN_API_MAX_JSON_DEPTH is
# a 400 (Python's parser recurses).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.env_int("TWIN_MAX_REQUEST_BODY", 5 * 1024 * 1024, minimum=1024)
TWIN_API_MAX_JSON_DEPTH = env.env_int("TWIN_API_MAX_JSON_DEPTH", 32, minimum=2)
# Rate limits of API calls (twin/api/throttling.py), per user and per anonymous client address: generous, as the
# pages call the API a lot. Failed logins (twin/api/logins.py): after TWIN_LOGIN_FAILURES_MAX within
# TWIN_LOGIN_FAILURES_WINDOW seconds, wrong passwords of one (user name, address) or device cookie lock that pair or
# cookie, and wrong tokens from one address get 429; a valid token is always accepted. Counted in Redis, shared by every web process (cache "throttle", keys under its own prefix).
TWIN_API_RATE_ANON = os.environ.get("TWIN_API_RATE_ANON") or "600/min"
TWIN_API_RATE_USER = os.environ.get("TWIN_API_RATE_USER") or "3000/min"
TWIN_LOGIN_FAILURES_MAX = env.env_int("TWIN_LOGIN_FAILURES_MAX", 10, minimum=1)
TWIN_LOGIN_FAILURES_WINDOW = env.env_int("TWIN_LOGIN_FAILURES_WINDOW", 300, minimum=1)
TWIN_THROTTLE_CACHE = "throttle"
# Counts and summaries of large clusters (twin/inventory/kept.py), shared by every web process under the inventory's
# version ("" keeps them per process only: the tests).
TWIN_KEPT_CACHE = "kept"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    TWIN_THROTTLE_CACHE: {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": os.environ.get("TWIN_THROTTLE_KEY_PREFIX") or "twin:throttle",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    },
    TWIN_KEPT_CACHE: {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "twin:kept",
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster twin API",
    "DESCRIPTION": "Inventory of AI training clusters: every GPU, NIC, switch, port, link and SSD, and the topology.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # error statuses, optional authentication of open reads, brief answers (twin/api/schema.py)
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "twin.api.schema.postprocess"],
    "ENUM_NAME_OVERRIDES": {"StatusEnum": "twin.inventory.choices.Status"},
}

SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update({"RunKindEnum": "twin.runs.registry.RunKind",
                                                   "RunStatusEnum": "twin.runs.choices.RunStatus",
                                                   # the placement policies, and a collective's (a list too)
                                                   "PlacementEnum": "sim.fabric.placement.PLACEMENTS",
                                                   "ListedPlacementEnum": "sim.fabric.params.LISTED_PLACEMENTS",
                                                   # a checkpoint's mode (checkpoint and failures kinds), the
                                                   # stores a failures run may take its checkpoint times from
                                                   "CheckpointModeEnum": "twin.capabilities.failures.kinds.checkpoint_modes",
                                                   "FailureStoreEnum": "twin.capabilities.failures.kinds.failure_stores",
                                                   "StoreEnum": "sim.fabric.spec.STORAGE_KINDS"})

# The clusters the run command builds when they are absent.
TWIN_DEFAULT_CLUSTERS = env.env_list("TWIN_DEFAULT_CLUSTERS", "meta-roce-24k,meta-ib-24k")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"twin": {"level": "INFO"}},
}

# Browser pages: Django's own login; reading follows TWIN_API_ANONYMOUS_READ like the API.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "overview"
