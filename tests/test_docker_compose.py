"""docker-compose.yml describes the system ``make run`` starts, spread over containers.

Debian's ``docker-compose config`` (``make system-deps`` installs it) validates the file and
prints it resolved — anchors merged, variables substituted — and the tests read that result,
not the YAML as written. They check the shape the issue asks for (Redis with an append-only
file on a volume, three brokers with distinct ids and data volumes advertising their service
names, web, monitor, worker and beat on one PostgreSQL database, Spark only under the
``spark`` profile, three Redis servers and three sentinels under the ``sentinel`` profile
that every service reaches through ``WEIR_REDIS_URL``) and that each Weir container runs
exactly what ``make run`` runs: the argument lists are taken from a real ``manage.py
devcluster`` (its "starting NAME: ARGV" lines) and compared after mapping the host-only parts
(interpreter path, loopback address and ports, data directory) to the containers' ones.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import dj_database_url
import pytest
import yaml

from tests.controlplane.devcluster import start_devcluster
from tests.weir.clients.conftest import ROOT, free_port

COMPOSE_FILE = ROOT / "docker-compose.yml"
BROKERS = {"broker-1": 1, "broker-2": 2, "broker-3": 3}
CONTROL_PLANE = ("web", "monitor", "worker", "beat")
SPARK = ("spark-master", "spark-worker")
REDIS_NODES = ("redis-1", "redis-2", "redis-3")
SENTINELS = ("sentinel-1", "sentinel-2", "sentinel-3")
SENTINEL_URL = "redis+sentinel://sentinel-1:26379,sentinel-2:26379,sentinel-3:26379/weir/0"
FIRST_BROKER_PORT = 9092
# Variables the file substitutes: the tests resolve it with none of them set unless they say.
SUBSTITUTED = (
    "WEIR_REDIS_URL",
    "WEIR_CLUSTER_ID",
    "WEIR_LOG_LEVEL",
    "WEIR_SPARK_MASTER",
    "POSTGRES_PASSWORD",
    "DJANGO_SECRET_KEY",
    "DJANGO_ALLOWED_HOSTS",
    "SPARK_WORKER_CORES",
    "SPARK_WORKER_MEMORY",
)


def compose_config(*args: str, **env: str) -> dict[str, Any]:
    """``docker-compose [args] config``, parsed."""
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.fail(
            "docker-compose is not on PATH: `make system-deps` installs Debian's docker-compose, "
            "which this test needs to validate docker-compose.yml"
        )
    environ = {k: v for k, v in os.environ.items() if k not in SUBSTITUTED}
    environ.update(env)
    done = subprocess.run(
        [binary, "-f", str(COMPOSE_FILE), *args, "config"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"docker-compose config rejected the file:\n{done.stderr}"
    return yaml.safe_load(done.stdout)


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return compose_config()


def services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return config["services"]


def named_volumes(service: dict[str, Any]) -> dict[str, str]:
    """Named volumes of a service: target path → volume name."""
    found = {}
    for volume in service.get("volumes", []):
        source, target = (
            volume.split(":")[:2]
            if isinstance(volume, str)
            else (
                volume["source"],
                volume["target"],
            )
        )
        found[target] = source
    return found


def test_every_service_of_the_system_is_described(config: dict[str, Any]) -> None:
    expected = {"redis", "postgres", "init", *BROKERS, *CONTROL_PLANE, *SPARK}
    assert set(services(config)) == expected | {*REDIS_NODES, *SENTINELS}


def test_weir_services_run_the_image_built_from_the_dockerfile(config: dict[str, Any]) -> None:
    for name in ("init", *BROKERS, *CONTROL_PLANE, *SPARK):
        service = services(config)[name]
        assert Path(service["build"]["context"]) == ROOT, name
        assert service["image"] == "weir:latest", name
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.MULTILINE)
    assert "openjdk-17-jre-headless" in dockerfile
    assert "pip install -r requirements.txt" in dockerfile


def test_redis_keeps_an_append_only_file_on_a_volume(config: dict[str, Any]) -> None:
    redis = services(config)["redis"]
    command = redis["command"]
    assert command[0] == "redis-server"
    assert command[command.index("--appendonly") + 1] == "yes"
    assert named_volumes(redis)["/data"] in config["volumes"]


def test_brokers_have_distinct_ids_ports_and_data_volumes_and_advertise_their_names(
    config: dict[str, Any],
) -> None:
    volumes: set[str] = set()
    for name, broker_id in BROKERS.items():
        service = services(config)[name]
        command = service["command"]
        flag = dict(zip(command[3::2], command[4::2], strict=True))
        assert command[:3] == ["python", "manage.py", "runbroker"]
        assert flag["--broker-id"] == str(broker_id)
        port = FIRST_BROKER_PORT + broker_id - 1
        assert flag["--listen"] == f"0.0.0.0:{port}"
        assert flag["--advertise"] == f"{name}:{port}"
        assert service["hostname"] == name
        assert {"published": port, "target": port} in service["ports"]
        data_volume = named_volumes(service)[flag["--data-dir"]]
        assert data_volume in config["volumes"]
        volumes.add(data_volume)
        assert service["environment"]["WEIR_REDIS_URL"] == "redis://redis:6379/0"
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    assert len(volumes) == len(BROKERS)


def test_control_plane_shares_one_postgres_database_migrated_before_it_starts(
    config: dict[str, Any],
) -> None:
    postgres = services(config)["postgres"]["environment"]
    for name in ("init", *CONTROL_PLANE):
        environment = services(config)[name]["environment"]
        database = dj_database_url.parse(environment["DATABASE_URL"])
        assert database["ENGINE"] == "django.db.backends.postgresql", name
        assert (database["HOST"], database["NAME"]) == ("postgres", postgres["POSTGRES_DB"])
        assert (database["USER"], database["PASSWORD"]) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
        )
        assert environment["WEIR_REDIS_URL"] == "redis://redis:6379/0", name
    for name in CONTROL_PLANE:
        depends = services(config)[name]["depends_on"]
        assert depends["init"]["condition"] == "service_completed_successfully", name
    script = services(config)["init"]["command"][-1]
    assert script.index("manage.py migrate") < script.index("manage.py ensure-admin")


def test_spark_runs_only_under_its_profile_and_the_worker_can_be_pointed_at_it(
    config: dict[str, Any],
) -> None:
    for name, service in services(config).items():
        assert (service.get("profiles") == ["spark"]) == (name in SPARK), name
        assert (service.get("profiles") == ["sentinel"]) == (name in REDIS_NODES + SENTINELS)
    master = services(config)["spark-master"]["command"]
    assert "org.apache.spark.deploy.master.Master" in master
    assert master[master.index("--port") + 1] == "7077"
    assert "spark://spark-master:7077" in services(config)["spark-worker"]["command"]
    # local[*] unless the operator points the analytics at the cluster.
    assert services(config)["worker"]["environment"]["WEIR_SPARK_MASTER"] == ""
    pointed = compose_config(WEIR_SPARK_MASTER="spark://spark-master:7077")
    for name in ("web", "worker"):
        environment = services(pointed)[name]["environment"]
        assert environment["WEIR_SPARK_MASTER"] == "spark://spark-master:7077"


def _flags(command: list[str]) -> dict[str, str]:
    """``--name value`` pairs of a redis-server command line (``--replicaof`` takes two)."""
    return {arg: command[at + 1] for at, arg in enumerate(command) if arg.startswith("--")}


def test_sentinel_profile_has_three_durable_redis_and_three_sentinels_all_services_use() -> None:
    config = compose_config("--profile", "sentinel", WEIR_REDIS_URL=SENTINEL_URL)
    for name in REDIS_NODES:
        node = services(config)[name]
        flags = _flags(node["command"])
        assert node["command"][0] == "redis-server", name
        assert flags["--appendonly"] == "yes" and flags["--appendfsync"] == "always", name
        assert flags["--min-replicas-to-write"] == "1", name
        assert flags["--min-replicas-max-lag"] == "10", name
        assert named_volumes(node)["/data"] in config["volumes"], name
    assert "--replicaof" not in services(config)["redis-1"]["command"]
    for name in ("redis-2", "redis-3"):
        command = services(config)[name]["command"]
        assert command[command.index("--replicaof") :][:3] == ["--replicaof", "redis-1", "6379"]
    for name in SENTINELS:
        sentinel = services(config)[name]
        script = sentinel["command"][-1]
        assert "sentinel monitor weir redis-1 6379 2" in script, name  # quorum 2
        assert "--sentinel" in script and named_volumes(sentinel)["/data"] in config["volumes"]
    for name in ("init", *BROKERS, *CONTROL_PLANE, *SPARK):
        assert services(config)[name]["environment"]["WEIR_REDIS_URL"] == SENTINEL_URL, name


# the same commands as `make run` ---------------------------------------------------------------


def devcluster_commands(redis_url: str, root: Path) -> tuple[dict[str, list[str]], int, int]:
    """Run ``manage.py devcluster`` until it is up; its children's argument lists by name."""
    base_port, web_port = free_port(), free_port()
    process = start_devcluster(redis_url, root, base_port, web_port)
    started: dict[str, list[str]] = {}
    output = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            found = re.match(r"starting (\S+): (.*)$", line.rstrip("\n"))
            if found:
                started[found[1]] = found[2].split(" ")
            if line.startswith("Weir is up"):
                break
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)
    assert "web" in started, "".join(output)
    return started, base_port, web_port


@pytest.mark.integration
def test_weir_containers_run_the_commands_make_run_starts(
    config: dict[str, Any], redis_server: str, tmp_path: Path
) -> None:
    started, base_port, web_port = devcluster_commands(redis_server, tmp_path)
    assert set(started) == {*BROKERS, *CONTROL_PLANE}
    # What differs between one host and a network of containers.
    host_to_container = {sys.executable: "python", "127.0.0.1": "0.0.0.0", str(web_port): "8000"}
    for name, broker_id in BROKERS.items():
        host_to_container[f"127.0.0.1:{base_port + broker_id - 1}"] = (
            f"0.0.0.0:{FIRST_BROKER_PORT + broker_id - 1}"
        )
        host_to_container[str(tmp_path / "data" / name)] = f"/app/data/{name}"
    for name, argv in started.items():
        expected = [host_to_container.get(arg, arg) for arg in argv]
        command = list(services(config)[name]["command"])
        if name in BROKERS:
            # The one flag a container adds: the name clients reach it by.
            at = command.index("--advertise")
            del command[at : at + 2]
        assert command == expected, name
