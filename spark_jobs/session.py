"""A SparkSession for Weir's analytics: local by default, any cluster via ``WEIR_SPARK_MASTER``.

Theory of operation
-------------------
The master is the argument, else ``WEIR_SPARK_MASTER``, else ``local[*]``. Python workers must
run this project's interpreter (it has confluent-kafka, pyarrow and pandas), so
``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` default to ``sys.executable``. Workers must also
import ``spark_jobs`` (Spark unpickles the data source there): on a local master the project
root goes on the workers' ``PYTHONPATH``; on a cluster the package is zipped and shipped with
``addPyFile`` (the executors' Python still needs confluent-kafka, pyarrow and pandas
installed). Local sessions use few shuffle partitions (the default 200 is for clusters and costs
seconds of scheduling on small jobs) and no web UI unless ``WEIR_SPARK_UI=1``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs import register

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
DEFAULT_MASTER = "local[*]"


def resolve_master(master: str | None = None) -> str:
    """``master`` > env ``WEIR_SPARK_MASTER`` > ``local[*]``."""
    return master or os.environ.get("WEIR_SPARK_MASTER") or DEFAULT_MASTER


def spark_session(app_name: str = "weir", master: str | None = None) -> SparkSession:
    """A session (reused if one is active) with the ``weir`` data source registered."""
    master = resolve_master(master)
    local = master.startswith("local")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        # Workers fork from a daemon that inherits this environment.
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(PROJECT_ROOT) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(PROJECT_ROOT), *paths] if p)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", os.environ.get("WEIR_SPARK_UI", "0") == "1" or not local)
        .config("spark.ui.showConsoleProgress", "false")
    )
    if local:
        builder = (
            builder.config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "4")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    spark = builder.getOrCreate()
    if not local:
        spark.sparkContext.addPyFile(str(package_zip()))
    register(spark)
    return spark


def package_zip() -> Path:
    """``spark_jobs`` as a zip for ``addPyFile`` (rebuilt each call; it is a few KB)."""
    target = Path(tempfile.mkdtemp(prefix="weir-spark-")) / "spark_jobs.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(PACKAGE_DIR.rglob("*.py")):
            archive.write(path, path.relative_to(PROJECT_ROOT))
    return target
