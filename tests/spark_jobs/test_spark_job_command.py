"""``manage.py spark-job``: list the jobs, run one by hand, refuse bad input clearly."""

from __future__ import annotations

import json
import uuid
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from controlplane.models import AnalyticsResult, Job
from tests.spark_jobs.conftest import create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_list_names_every_analytics_job() -> None:
    out = StringIO()
    call_command("spark-job", "--list", stdout=out)
    names = [line.split()[0] for line in out.getvalue().splitlines()]
    assert names == ["traffic", "hot-partitions", "record-sizes", "lag-trends"]


def test_a_job_run_by_hand_is_recorded_and_its_result_stored(spark: object, bootstrap: str) -> None:
    topic = f"spark-cli-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, ((topic, i % 2, b"k", b"v" * (10 + i)) for i in range(40)))
    out = StringIO()
    call_command("spark-job", "record-sizes", "--topic", topic, "--since-hours", "1", stdout=out)

    printed = json.loads(out.getvalue())
    job = Job.objects.get(pk=printed["job"])
    assert (job.name, job.status, job.scheduled_by) == (
        "analytics:record-sizes",
        "succeeded",
        "cli",
    )
    assert job.params == {"topics": [topic], "since_hours": 1.0}
    assert job.rows_produced == printed["rows"] > 0
    result = AnalyticsResult.objects.get(job=job)
    assert result.name == "record-sizes" and result.data


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name a job to run"),
        (("vacuum",), "no analytics job named 'vacuum'"),
        (("traffic", "--since-hours", "0"), "--since-hours must be positive"),
    ],
)
def test_bad_invocations_name_the_problem(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("spark-job", *args)
    assert not Job.objects.exists()
