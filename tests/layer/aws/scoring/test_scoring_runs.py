"""A scoring night end to end on the stand-in's Batch Transform (spotline.aws.scoring.scoring_runs): the
night of the issue, 40 million records at 1,500 records/s per instance in a 3-hour window, sized
to the formula's count and done inside its window with its throughput measured; the same night
with the throughput halved mid-run adds shards in time or says WindowAtRisk while the window is
still open; one giant file is warned with the numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from spotline.aws.common import clients
from spotline.aws.scoring.scoring_runs import CHECK_SECONDS, ScoringRun, ThroughputStore, advance, plan_run
from spotline.core.manifest.manifest import validate_document
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_plan import STARTUP_SECONDS, WAVES
from spotline_dev.harness.standin import BatchSageMakerStandIn, InMemoryCheckpointStore, SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformWeather

OPENS = datetime(2026, 12, 5, 0, tzinfo=UTC)  # 01:00 in Berlin
CLOSES = OPENS + timedelta(hours=3)
NIGHT, OBJECTS = 40_000_000, 400
REGION = "us-east-1"


class Clock:
    def __init__(self) -> None:
        self.now = OPENS

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def night(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Clock, BatchSageMakerStandIn]]:
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        clock = Clock()
        standin = BatchSageMakerStandIn(
            clock, SpotWeather(), lambda _r: TrainingBehaviour(duration=60), InMemoryCheckpointStore()
        )
        boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        standin.install(boto3.DEFAULT_SESSION)
        clients.reset_clients()
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in ("media-recs-data", "media-recs-scores"):
            s3.create_bucket(Bucket=bucket)
        for index in range(OBJECTS):
            key = f"pairs/2026-12-05/part-{index:04d}.csv"
            s3.put_object(Bucket="media-recs-data", Key=key, Body=b"0123456789\n" * 100)
            standin.transform_records[("media-recs-data", key)] = NIGHT // OBJECTS
        boto3.client("sagemaker", region_name=REGION).create_model(
            ModelName="media-recs-ranker-2026-11",
            ExecutionRoleArn="arn:aws:iam::123456789012:role/spotline/media-scoring",
            PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:1"},
        )
        yield clock, standin
        clients.reset_clients()


def _spec(**changes: object) -> ScoringSpec:
    import yaml

    from spotline_dev.harness.local.template import PROJECT_ROOT

    document = yaml.safe_load((PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_text())
    document["spec"]["input"]["s3Uri"] = "s3://media-recs-data/pairs/2026-12-05/"
    scoring = validate_document(document, now=OPENS - timedelta(days=1)).scoring
    assert scoring is not None
    return replace(scoring, **changes)  # type: ignore[arg-type]


def _night(clock: Clock, spec: ScoringSpec, recorded: float | None) -> tuple[ScoringRun, list[tuple[str, str]]]:
    notices: list[tuple[str, str]] = []
    run = plan_run(spec, ready_at=OPENS, now=clock.now, recorded=recorded)
    for _ in range(200):
        run = advance(spec, run, now=clock.now, notify=lambda kind, why: notices.append((kind, why)))
        if run.done:
            return run, notices
        clock.now += timedelta(seconds=CHECK_SECONDS)
    raise AssertionError("the night never ended")


def _ended(run: ScoringRun) -> datetime:
    return max(datetime.fromisoformat(str(s.ended_at)) for s in run.shards)


def test_the_issues_night_is_sized_to_the_formula_and_ends_inside_its_window(night) -> None:  # type: ignore[no-untyped-def]
    clock, standin = night
    standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=STARTUP_SECONDS)
    run, notices = _night(clock, _spec(), recorded=1500.0)
    # Each instance scores 6 shards (WAVES) in turn, each with its 8-minute start-up: 10,800 s - 6 x
    # 480 s = 7,920 s of scoring. 4 x 1,500 x 7,920 = 47,520,000 < 40,000,000 x 1.3; 5 x 1,500 x
    # 7,920 = 59,400,000: 5 instances.
    assert run.sizing["instances"] == 5
    assert (run.sizing["throughputSource"], run.target, notices) == ("measured", 5, [])
    assert _ended(run) <= CLOSES
    assert run.measured == pytest.approx(1500, rel=0.01)
    assert len(standin.transforms.jobs) == len(run.shards) == 5 * WAVES  # one transform job per shard, none twice
    outputs = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket="media-recs-scores", Prefix="nightly/")
    assert sum(1 for o in outputs.get("Contents", []) if o["Key"].endswith(".csv.out")) == OBJECTS


def test_a_first_night_measures_a_shard_before_it_sizes_the_fleet(night) -> None:  # type: ignore[no-untyped-def]
    clock, standin = night
    standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=STARTUP_SECONDS)
    run, notices = _night(clock, _spec(), recorded=None)
    # sized after the probe with the 30 shards left, 6 per instance in turn: 5 (as above)
    assert run.sizing["throughputSource"] == "probe" and run.sizing["instances"] == 5
    first = sorted(standin.transforms.jobs.values(), key=lambda j: j.created)
    assert first[1].created > first[0].started  # the fleet waited for the probe shard's figures
    assert _ended(run) <= CLOSES and notices == []


def test_a_night_that_slows_by_half_adds_shards_in_time(night) -> None:  # type: ignore[no-untyped-def]
    clock, standin = night
    halved = [(OPENS.timestamp() + 3600, 0.5)]
    standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=STARTUP_SECONDS, changes=halved)
    run, notices = _night(clock, _spec(), recorded=1500.0)
    assert run.target > 4  # more instances for what was left
    assert _ended(run) <= CLOSES and notices == []


def test_a_night_too_slow_even_at_max_instances_says_window_at_risk_while_it_is_open(night) -> None:  # type: ignore[no-untyped-def]
    clock, standin = night
    halved = [(OPENS.timestamp() + 3600, 0.5)]
    standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=STARTUP_SECONDS, changes=halved)
    run, notices = _night(clock, _spec(max_instances=5), recorded=1500.0)
    ((kind, why),) = notices
    assert kind == "WindowAtRisk" and why.endswith("even on maxInstances (5)")
    (notice,) = run.notifications
    assert datetime.fromisoformat(notice["at"]) < CLOSES


def test_one_giant_file_is_warned_with_the_numbers(night) -> None:  # type: ignore[no-untyped-def]
    clock, _standin = night
    s3 = boto3.client("s3", region_name=REGION)
    s3.put_object(Bucket="media-recs-data", Key="giant/pairs.csv", Body=b"0123456789\n" * 100)
    spec = _spec(input_s3_uri="s3://media-recs-data/giant/")
    run = plan_run(spec, ready_at=OPENS, now=clock.now, recorded=1500.0)
    assert run.sizing["warning"] == (
        "the input has 1 object(s) for 4 instance(s): Batch Transform gives each instance whole objects, "
        "so at most 1 can work; split it into at least 4 objects"
    )
    assert "the input's 1 object(s) allows 1" in run.sizing["atRisk"]
    assert json.loads(json.dumps(run.to_dict()))["sizing"]["instances"] == 1


def test_the_throughput_store_sizes_from_the_median_of_recent_nights(night) -> None:  # type: ignore[no-untyped-def]
    dynamodb = boto3.resource("dynamodb", region_name=REGION)
    table = dynamodb.create_table(
        TableName="throughput",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    store, spec = ThroughputStore(table), _spec()
    assert store.recent(spec, "media-recs-ranker-2026-11") is None
    for day, rate in enumerate([1400.0, 1500.0, 900.0, 1600.0]):
        store.record(spec, "media-recs-ranker-2026-11", f"r{day}", f"2026-12-0{day + 1}", rate)
    store.record(spec, "another-model", "r9", "2026-12-09", 10.0)
    assert store.recent(spec, "media-recs-ranker-2026-11") == 1450.0


def test_a_night_sized_above_the_transform_quota_starts_the_rest_as_instances_free(night) -> None:  # type: ignore[no-untyped-def]
    clock, standin = night
    standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=STARTUP_SECONDS)
    standin.transforms.instance_quota["ml.c5.2xlarge"] = 2  # sized at 5: CreateTransformJob refuses the rest
    run, notices = _night(clock, _spec(), recorded=1500.0)
    assert run.sizing["instances"] == 5 and not any(s.failed for s in run.shards)
    assert all(s.ended_at for s in run.shards) and len(standin.transforms.jobs) == len(run.shards)
    assert {job.stopped_at for job in standin.transforms.jobs.values()} == {None}  # nothing stopped for it
    ((kind, why),) = notices  # told once, while the window is open, that the quota holds it to 2
    assert kind == "WindowAtRisk"
    assert why.startswith("the account's quota of ml.c5.2xlarge for transform jobs holds the run to 2 instance(s)")
    assert _ended(run) > CLOSES
