"""Reading progress.json from S3 (spotline.aws.state.progress) on moto: a progress.json without
"shards" is read as it always was; with "shards" its step counts only when S3 holds every rank's
marker, else the newest older step that does, else nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from spotline.aws.common import clients
from spotline.aws.state import progress
from spotline.aws.state.progress import read_progress

REGION = "us-east-1"
BUCKET = "team-checkpoints"
URI = f"s3://{BUCKET}/runs/ranker/"
SINGLE = {"step": 40, "totalSteps": 100, "updatedAt": "2026-11-29T08:00:00Z", "trainingSeconds": 1200.0}
SHARDED = {**SINGLE, "byInstanceType": {"ml.p4d.24xlarge": {"steps": 40, "seconds": 1200.0}}, "shards": 4}


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        clients.reset_clients()
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        yield s3
        clients.reset_clients()


def put_progress(s3: Any, body: dict[str, Any]) -> None:
    s3.put_object(Bucket=BUCKET, Key="runs/ranker/progress.json", Body=json.dumps(body).encode())


def put_shards(s3: Any, step: int, ranks: range | list[int], world: int = 4, *, markers: bool = True) -> None:
    for rank in ranks:
        s3.put_object(Bucket=BUCKET, Key=f"runs/ranker/checkpoint-{step}/shard-{rank}-of-{world}", Body=b"x")
        if markers:
            s3.put_object(Bucket=BUCKET, Key=f"runs/ranker/checkpoint-{step}/done/shard-{rank}-of-{world}", Body=b"{}")


def test_a_progress_json_without_shards_is_read_as_before_and_nothing_is_listed(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    put_progress(s3, SINGLE)
    monkeypatch.setattr(progress, "_complete_step", None)  # never reached
    assert read_progress(URI) == SINGLE


def test_a_step_whose_markers_are_all_in_s3_is_trusted(s3: Any) -> None:
    put_progress(s3, SHARDED)
    put_shards(s3, 20, range(4))
    put_shards(s3, 40, range(4))
    assert read_progress(URI) == SHARDED


def test_a_step_missing_a_marker_falls_back_to_the_newest_complete_one(s3: Any) -> None:
    put_progress(s3, SHARDED)
    put_shards(s3, 10, range(4))
    put_shards(s3, 20, range(4))
    put_shards(s3, 40, [0, 1, 2])  # rank 3's instance has not uploaded yet
    put_shards(s3, 40, [3], markers=False)

    read = read_progress(URI)

    assert read is not None
    assert (read["step"], read["totalSteps"], read["shards"], read["trainingSeconds"]) == (20, 100, 4, 600.0)
    assert "byInstanceType" not in read  # not known per type at step 20
    assert read["updatedAt"].endswith("Z") and read["updatedAt"] != SHARDED["updatedAt"]  # the markers' upload


def test_markers_of_another_world_size_do_not_complete_the_step(s3: Any) -> None:
    put_progress(s3, SHARDED)
    put_shards(s3, 40, range(2), world=2)  # an earlier run of 2 ranks at the same step
    put_shards(s3, 40, range(3))
    assert read_progress(URI) is None


def test_no_complete_step_is_no_usable_progress(s3: Any) -> None:
    put_progress(s3, SHARDED)
    put_shards(s3, 20, [0, 1])
    put_shards(s3, 40, [1, 2, 3])
    assert read_progress(URI) is None


def test_a_checkpoint_at_the_bucket_root_is_checked_there(s3: Any) -> None:
    s3.put_object(Bucket=BUCKET, Key="progress.json", Body=json.dumps({**SHARDED, "shards": 2}).encode())
    for rank in range(2):
        s3.put_object(Bucket=BUCKET, Key=f"checkpoint-40/done/shard-{rank}-of-2", Body=b"{}")
    assert read_progress(f"s3://{BUCKET}")["step"] == 40  # type: ignore[index]
    s3.delete_object(Bucket=BUCKET, Key="checkpoint-40/done/shard-1-of-2")
    assert read_progress(f"s3://{BUCKET}") is None


@pytest.mark.parametrize("shards", [0, -1, "4", True, None])
def test_a_nonsense_shard_count_is_not_trusted(s3: Any, shards: object) -> None:
    put_progress(s3, {**SHARDED, "shards": shards})
    put_shards(s3, 40, range(4))
    assert read_progress(URI) is None


def test_a_listing_that_is_denied_leaves_the_step_untrusted(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    put_progress(s3, SHARDED)
    real = clients.client

    class Denied:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            if name in {"list_objects_v2", "get_paginator"}:
                raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "ListObjectsV2")
            return getattr(self._inner, name)

    monkeypatch.setattr(progress, "client", lambda service, region=None: Denied(real(service, region)))
    assert read_progress(URI) is None


def test_the_marker_listing_is_bounded(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    real = clients.client

    class Counting:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def get_paginator(self, name: str) -> Any:
            paginator = self._inner.get_paginator(name)

            class Recording:
                def paginate(self, **kwargs: Any) -> Any:
                    calls.append(kwargs)
                    return paginator.paginate(**kwargs)

            return Recording()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    monkeypatch.setattr(progress, "client", lambda service, region=None: Counting(real(service, region)))
    put_progress(s3, SHARDED)
    for step in (5, 10, 15, 20, 30):
        put_shards(s3, step, [0])
    put_shards(s3, 5, range(4))
    assert read_progress(URI) is None  # step 5 is complete but beyond the OLDER_STEPS newest older ones
    assert len(calls) == 1 + progress.OLDER_STEPS
    assert all(c["PaginationConfig"]["MaxItems"] == 1000 * progress.MARKER_PAGES for c in calls)
