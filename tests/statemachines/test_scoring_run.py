"""The scoring run state machine (statemachines/scoring_run.asl.json, executed as is) on the local
stack: a scoring manifest uploaded starts a run, which is planned, kept on schedule on the
stand-in's Batch Transform and recorded; one with dependsOn is registered and each Dataset Ready
event starts the night's run; a team that may not use the model is refused naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from conftest import emitted_metrics, entered_states, upload
from spotline_dev.local.handles import LocalStack
from spotline_dev.local.stack import start_local_stack
from spotline_dev.local.template import PROJECT_ROOT
from spotline_dev.standin.transform_jobs import TransformWeather

OPENS = datetime(2026, 12, 5, 0, tzinfo=UTC)  # 01:00 in Berlin
NIGHT, OBJECTS = 40_000_000, 400
MODEL_ROLE = "arn:aws:iam::123456789012:role/spotline/media-scoring"
TEAM = {
    "instanceFamilies": ["c5"],
    "maxInstances": 12,
    "roles": ["arn:aws:iam::123456789012:role/spotline/media-*"],
    "s3Prefixes": ["s3://media-recs-data/", "s3://media-recs-scores/"],
    "images": ["123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:*"],
}


@pytest.fixture
def scoring_stack() -> Iterator[LocalStack]:
    with start_local_stack(OPENS - timedelta(minutes=5), team_policy={"teams": {"media-recs": TEAM}}) as stack:
        stack.standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=480)
        s3 = stack.client("s3")
        for bucket in ("media-recs-data", "media-recs-scores"):
            s3.create_bucket(Bucket=bucket)
        for index in range(OBJECTS):
            key = f"pairs/2026-12-05/part-{index:04d}.csv"
            s3.put_object(Bucket="media-recs-data", Key=key, Body=b"0123456789\n" * 100)
            stack.standin.transform_records[("media-recs-data", key)] = NIGHT // OBJECTS
        stack.client("sagemaker").create_model(
            ModelName="media-recs-ranker-2026-11",
            ExecutionRoleArn=MODEL_ROLE,
            PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11"},
        )
        yield stack


def _run(stack: LocalStack, manifest: str, key: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    upload(stack, key, (PROJECT_ROOT / "examples" / "scoring" / manifest).read_bytes())
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"], timeout=600)
    return execution, stack.history(started["executionArn"])


def test_a_scoring_manifest_runs_once_on_upload_and_ends_before_its_deadline(
    scoring_stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    execution, history = _run(scoring_stack, "scores-on-upload.yaml", "manifests/media-recs/backfill-scores.yaml")
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    states = entered_states(history)
    assert states[:3] == ["PlanScoringRun", "IsThePlanValid?", "WaitForTheWindowToOpen"]
    assert states[-3:] == ["RecordScoringRun", "DidEveryShardSucceed?", "Scored"]
    outcome = json.loads(execution["output"])["outcome"]
    assert outcome["windowMet"] is True and outcome["instances"] == 4, outcome
    assert outcome["finishedAt"] <= "2026-12-05T03:00:00Z"
    report = json.loads(
        scoring_stack.client("s3")
        .get_object(Bucket=scoring_stack.bucket, Key=outcome["report"].split("/", 3)[3])["Body"]
        .read()
    )
    assert report["kind"] == "ScoringJob" and report["sizing"]["instances"] == 4
    # The night's margin, per job and stack-wide (the trend alarm's: the service dimension only).
    margins = [m for m in emitted_metrics(capsys.readouterr().out) if "ScoringWindowMarginSeconds" in m]
    dimensions = sorted(tuple(sorted(m["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0])) for m in margins)
    assert dimensions == [("job", "service", "team"), ("service",)]
    assert [m["ScoringWindowMarginSeconds"] for m in margins] == [[float(report["marginSeconds"])]] * 2


def test_a_model_of_another_team_is_refused_naming_the_field(scoring_stack: LocalStack) -> None:
    scoring_stack.client("sagemaker").create_model(
        ModelName="ads-ranker",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/spotline/ads-scoring",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ads:1"},
    )
    body = (PROJECT_ROOT / "examples" / "scoring" / "scores-on-upload.yaml").read_text()
    upload(
        scoring_stack, "manifests/media-recs/ads.yaml", body.replace("media-recs-ranker-2026-11", "ads-ranker").encode()
    )
    (started,) = scoring_stack.deliver_events()
    execution = scoring_stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution["error"]) == ("FAILED", "ScoringManifestRejected")
    assert (
        "spec.model.name: ads-ranker runs under arn:aws:iam::123456789012:role/spotline/ads-scoring"
        in execution["cause"]
    )
    assert scoring_stack.standin.transforms.jobs == {}


def test_a_scoring_job_with_depends_on_is_registered_and_each_dataset_event_starts_a_night(
    scoring_stack: LocalStack,
) -> None:
    upload(
        scoring_stack,
        "manifests/media-recs/nightly-scores.yaml",
        (PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_bytes(),
    )
    (registered,) = scoring_stack.deliver_events()
    assert registered == {"status": "registered", "datasets": ["media-pairs-nightly"]}
    event = {
        "Source": "spotline.preprocessing",
        "DetailType": "Dataset Ready",
        "Detail": json.dumps(
            {
                "dataset": "media-pairs-nightly",
                "location": "s3://media-recs-data/pairs/2026-12-05/",
                "producedAt": "2026-12-05T00:00:00Z",
            }
        ),
    }
    events = boto3.client("events", region_name="us-east-1")
    events.put_events(Entries=[event, event])  # delivered twice: one run
    results = scoring_stack.deliver_events()
    names = {name for r in results for name in r.get("scoringRuns", [])}
    (name,) = names
    arn = f"arn:aws:states:us-east-1:123456789012:execution:spotline-local-scoring-run:{name}"
    execution = scoring_stack.wait_for_execution(arn, timeout=600)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert json.loads(execution["output"])["outcome"]["windowEnd"] == "2026-12-05T03:00:00Z"


def test_a_scoring_run_stopped_in_the_console_leaves_no_transform_job_scoring(scoring_stack: LocalStack) -> None:
    scoring_stack.stop_executions_after(3600)  # on-call stops it an hour in
    execution, _history = _run(scoring_stack, "scores-on-upload.yaml", "manifests/media-recs/backfill-scores.yaml")
    assert execution["status"] == "ABORTED"
    now = scoring_stack.clock.now().timestamp()
    assert any(job.status(now) in ("InProgress", "Stopping") for job in scoring_stack.standin.transforms.jobs.values())
    (ended,) = scoring_stack.deliver_events(sources=("aws.states",))  # the end-of-execution rule
    assert sorted(ended["stoppedTransformJobs"]) == sorted(
        job.name for job in scoring_stack.standin.transforms.jobs.values() if job.stopped_at is not None
    )
    later = scoring_stack.clock.now().timestamp() + 60
    assert all(job.status(later) in ("Completed", "Stopped") for job in scoring_stack.standin.transforms.jobs.values())
