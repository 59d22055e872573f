"""Django settings for Weir's control plane.

Everything an operator tunes comes from the environment (``WEIR_*``, ``DATABASE_URL``,
``DJANGO_*``) so the same settings module serves development, tests and deployment.
"""

import os
from pathlib import Path

import dj_database_url

from controlplane.kafka_security import KafkaSecurity
from controlplane.redis_config import celery_redis, channel_layer_host

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "weir-development-only-secret-key-change-me")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")

# Coordination store shared by brokers and the control plane.
WEIR_REDIS_URL = os.environ.get("WEIR_REDIS_URL", "redis://127.0.0.1:6379/0")
WEIR_CLUSTER_ID = os.environ.get("WEIR_CLUSTER_ID", "weir")
# Where the control plane's Kafka clients bootstrap. Empty: the live brokers registered in Redis.
WEIR_BOOTSTRAP_SERVERS = os.environ.get("WEIR_BOOTSTRAP_SERVERS", "")
# How the control plane's Kafka clients authenticate (controlplane/kafka_security.py): the
# registered listener whose endpoints they use (empty: each broker's primary), the security
# protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), SASL credentials and TLS files.
WEIR_KAFKA_LISTENER = os.environ.get("WEIR_KAFKA_LISTENER", "")
WEIR_KAFKA_SECURITY_PROTOCOL = os.environ.get("WEIR_KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")
WEIR_KAFKA_SASL_MECHANISM = os.environ.get("WEIR_KAFKA_SASL_MECHANISM", "")
WEIR_KAFKA_SASL_USERNAME = os.environ.get("WEIR_KAFKA_SASL_USERNAME", "")
WEIR_KAFKA_SASL_PASSWORD = os.environ.get("WEIR_KAFKA_SASL_PASSWORD", "")
WEIR_KAFKA_SSL_CA_LOCATION = os.environ.get("WEIR_KAFKA_SSL_CA_LOCATION", "")
WEIR_KAFKA_SSL_CERTIFICATE_LOCATION = os.environ.get("WEIR_KAFKA_SSL_CERTIFICATE_LOCATION", "")
WEIR_KAFKA_SSL_KEY_LOCATION = os.environ.get("WEIR_KAFKA_SSL_KEY_LOCATION", "")
WEIR_KAFKA_SSL_KEY_PASSWORD = os.environ.get("WEIR_KAFKA_SSL_KEY_PASSWORD", "")
# Checked now, so a misconfiguration stops every process at startup naming the variable.
KafkaSecurity.from_settings(globals())
# REST proxy v2 consumer instances are dropped after this long without a request (Confluent's
# consumer.instance.timeout.ms).
WEIR_CONSUMER_INSTANCE_TIMEOUT_MS = int(
    os.environ.get("WEIR_CONSUMER_INSTANCE_TIMEOUT_MS", "300000")
)
# /metrics is open like any exporter unless this is set ("1"): then it needs a viewer.
WEIR_METRICS_REQUIRE_AUTH = os.environ.get("WEIR_METRICS_REQUIRE_AUTH", "")
# Lag history: one sample per partition every WEIR_LAG_HISTORY_INTERVAL_S seconds, kept for
# WEIR_LAG_HISTORY_DAYS days (full resolution for the last hour, one per minute before).
WEIR_LAG_HISTORY_INTERVAL_S = float(os.environ.get("WEIR_LAG_HISTORY_INTERVAL_S", "5"))
WEIR_LAG_HISTORY_DAYS = float(os.environ.get("WEIR_LAG_HISTORY_DAYS", "7"))
# The metadata-export job writes the cluster's metadata (weir.metadata.snapshot_file) here and
# keeps the newest WEIR_METADATA_EXPORT_KEEP files.
WEIR_METADATA_EXPORT_DIR = os.environ.get(
    "WEIR_METADATA_EXPORT_DIR", str(BASE_DIR / "var" / "metadata-exports")
)
WEIR_METADATA_EXPORT_KEEP = int(os.environ.get("WEIR_METADATA_EXPORT_KEEP", "24"))
# The connect-mirror-maker.properties the mirror-maker processes run (optional): with it the
# control plane knows every flow, reads lag from both clusters and can fail groups over
# (mirrors/); without it /api/mirrors/ shows what running mirror processes publish.
WEIR_MIRROR_PROPERTIES = os.environ.get("WEIR_MIRROR_PROPERTIES", "")
# Dead letter queues (dlq/): topics whose whole name matches this regular expression, plus any
# topic whose records carry Kafka Connect's or Spring's dead-letter headers. The default
# catches dlq/dlt/dead-letter as a name or a ./_/- separated part of one: orders.DLT,
# orders-dlt, dlq-orders, payments.dead-letter.
WEIR_DLQ_TOPIC_PATTERN = os.environ.get(
    "WEIR_DLQ_TOPIC_PATTERN", r"(?i)(.*[._-])?(dlq|dlt|dead[._-]?letters?)([._-].*)?"
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "django_celery_beat",
    "controlplane",
    "brokers",
    "topics",
    "groups",
    "mirrors",
    "schemaregistry",
    "dlq",
    "frontend",
]

MIDDLEWARE = [
    "controlplane.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "controlplane.audit.AuditMiddleware",
]

ROOT_URLCONF = "controlplane.urls"

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
                "frontend.context.dashboard",
            ],
        },
    },
]

ASGI_APPLICATION = "controlplane.asgi.application"

# SQLite by default; PostgreSQL (or anything dj-database-url knows) via DATABASE_URL.
DATABASES = {
    "default": dj_database_url.config(
        default="sqlite:///" + os.environ.get("WEIR_SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default shares one file between the web app, the monitor and Celery's
    # worker and beat: WAL lets readers go on while one writes, IMMEDIATE transactions take
    # the write lock up front (no upgrade deadlock), and a writer waits up to 20 s for it.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Without collectstatic (development, tests) WhiteNoise serves straight from the apps.
WHITENOISE_USE_FINDERS = True
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.min.js from the pinned plotly wheel: the dashboard needs no CDN.
    "frontend.static_finder.PlotlyFinder",
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# Channels: websocket fan-out through Redis, namespaced per cluster like every Weir key.
# A redis+sentinel:// WEIR_REDIS_URL becomes channels_redis's sentinel entry
# (controlplane/redis_config.py), with Weir's reconnection policy either way.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [channel_layer_host(WEIR_REDIS_URL)],
            "prefix": f"weir:{WEIR_CLUSTER_ID}:channels",
        },
    }
}

# Celery: Redis as broker and result backend; beat's schedules in the database (editable).
# A redis+sentinel:// URL (either variable) becomes kombu's sentinel:// list + master_name.
_CELERY_REDIS = celery_redis(os.environ.get("WEIR_CELERY_BROKER_URL", WEIR_REDIS_URL))
CELERY_BROKER_URL = _CELERY_REDIS.broker_url
CELERY_RESULT_BACKEND = _CELERY_REDIS.result_backend
CELERY_BROKER_TRANSPORT = _CELERY_REDIS.broker_transport
CELERY_BROKER_TRANSPORT_OPTIONS = dict(_CELERY_REDIS.transport_options)
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = dict(_CELERY_REDIS.transport_options)
CELERY_RESULT_EXPIRES = 24 * 3600
# One queue per cluster, so several clusters can share a Redis.
CELERY_TASK_DEFAULT_QUEUE = f"weir-{WEIR_CLUSTER_ID}"
CELERY_TASK_TRACK_STARTED = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"
# Threads, not forks: jobs spend their time waiting on brokers and on Spark's JVM, and one
# SparkSession per worker process is shared by every analytics run.
CELERY_WORKER_POOL = "threads"
CELERY_WORKER_CONCURRENCY = int(os.environ.get("WEIR_CELERY_CONCURRENCY", "4"))
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Analytics: Spark master (local[*] when unset) and how far back a job reads by default.
WEIR_SPARK_MASTER = os.environ.get("WEIR_SPARK_MASTER", "")
WEIR_ANALYTICS_WINDOW_H = float(os.environ.get("WEIR_ANALYTICS_WINDOW_H", "24"))

REST_FRAMEWORK = {
    # Basic first: an anonymous request is answered 401 with a WWW-Authenticate challenge.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "controlplane.authentication.CachedBasicAuthentication",
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["controlplane.roles.RolePermission"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "controlplane.content.KafkaV2JsonParser",
        "controlplane.content.KafkaJsonParser",
        "controlplane.content.KafkaJsonV2JsonParser",
        "controlplane.content.KafkaBinaryV2JsonParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "controlplane.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Weir control plane",
    "DESCRIPTION": (
        "Weir's operations API (/api/) and its Confluent-compatible REST proxy (/kafka/)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI's assets come from the sidecar package, served by Weir itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "controlplane.openapi.add_error_responses",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("WEIR_LOG_LEVEL", "WARNING")},
}
