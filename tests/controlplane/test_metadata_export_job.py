"""The scheduled ``metadata-export`` job: declared with a default schedule, run through the
same ``job_execute`` the Celery task calls, it writes a snapshot file into
``WEIR_METADATA_EXPORT_DIR``, keeps the newest ``WEIR_METADATA_EXPORT_KEEP`` and records the
run like every job (so it shows on the jobs page). Celery itself is exercised by the other
job tests (tests/controlplane/test_jobs_api.py); this is the cheapest layer that runs it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from controlplane import jobs
from controlplane.models import Job
from weir.metadata.snapshot_file import read_snapshot_file

pytestmark = pytest.mark.django_db


def test_the_export_job_is_scheduled_by_default() -> None:
    assert jobs.DEFAULT_SCHEDULES["metadata-export"] == 3600
    assert "metadata-export" in jobs.job_names()


def test_each_run_writes_an_export_and_keeps_the_newest(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> None:
    with override_settings(
        WEIR_REDIS_URL=redis_server,
        WEIR_CLUSTER_ID=cluster_id,
        WEIR_METADATA_EXPORT_DIR=str(tmp_path / "exports"),
        WEIR_METADATA_EXPORT_KEEP=2,
    ):
        runs = []
        for _ in range(3):
            job = jobs.job_create(name="metadata-export", scheduled_by="beat:weir metadata-export")
            runs.append(jobs.job_execute(job.pk, worker="test"))
    assert [(r.kind, r.status) for r in runs] == [("metadata-export", "succeeded")] * 3
    written = [Path(r.detail["path"]) for r in runs]
    assert sorted((tmp_path / "exports").iterdir()) == written[1:]
    assert runs[2].detail["pruned"] == [str(written[0])]
    assert "written to" in runs[2].message
    assert read_snapshot_file(written[2])["cluster_id"] == cluster_id
    assert Job.objects.filter(kind=Job.Kind.METADATA_EXPORT).count() == 3


def test_a_run_that_cannot_reach_redis_fails_with_the_reason(tmp_path: Path) -> None:
    with override_settings(
        WEIR_REDIS_URL="redis://127.0.0.1:1/0", WEIR_METADATA_EXPORT_DIR=str(tmp_path)
    ):
        job = jobs.job_execute(jobs.job_create(name="metadata-export", scheduled_by="cli").pk)
    assert job.status == "failed" and "ConnectionError" in job.error
    assert list(tmp_path.iterdir()) == []
