# One image for every Weir container: brokers, the web app, the lag monitor, Celery's worker
# and beat, and (profile "spark") a Spark master and worker.
#
# Why one image, Spark included: PySpark's executors run Weir's own Python (the `weir` data
# source in spark_jobs/ and the analytics jobs' functions), and Spark refuses a worker whose
# Python minor version differs from the driver's. Running the Spark master and worker from
# this image (the pyspark wheel ships Spark's jars and `spark-class`) gives the driver (the
# Celery worker) and the executors the same interpreter, the same pyarrow/pandas and the same
# spark_jobs package — which an off-the-shelf Spark image cannot promise.
FROM python:3.11-slim

# Java 17 for PySpark's JVM (driver in the Celery worker, master and worker in the spark
# profile); procps because Spark's launch scripts call `ps`.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=controlplane.settings \
    PYSPARK_PYTHON=/usr/local/bin/python \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python

WORKDIR /app

# Dependencies first so that a code change does not reinstall them (requirements.txt has
# psycopg, the driver DATABASE_URL=postgres://... needs).
COPY requirements.txt ./
RUN pip install -r requirements.txt

COPY . .

# Static assets collected once at build time; WhiteNoise serves them (no CDN, no nginx).
RUN python manage.py collectstatic --noinput -v 0

# Kafka protocol (brokers), the web app, Spark master / master UI / worker UI.
EXPOSE 9092 9093 9094 8000 7077 8080 8081

CMD ["python", "-m", "daphne", "-b", "0.0.0.0", "-p", "8000", "controlplane.asgi:application"]
