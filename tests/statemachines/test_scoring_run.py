"""The scoring run state machine (statemachines/scoring_run.asl.json, executed as is) on the local
stack: a scoring manifest uploaded starts a run, which is planned, kept on schedule on the
stand-in's Batch Transform and recorded; one with dependsOn is registered and each Dataset Ready
event starts the night's run; a team that may not use the model is refused naming the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from conftest import SCORING_OBJECTS, emitted_metrics, entered_states, upload
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.scoring.scoring import registered_model_name
from spotline_dev.explain import explain
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import ensure_image, ensure_role
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformWeather


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
    # 5 instances: each scores 6 shards in turn, 6 start-ups of 8 min (tests/layer/core/scoring/test_scoring_plan.py)
    assert outcome["windowMet"] is True and outcome["instances"] == 5, outcome
    assert outcome["finishedAt"] <= "2026-12-05T03:00:00Z"
    report = json.loads(
        scoring_stack.client("s3")
        .get_object(Bucket=scoring_stack.bucket, Key=outcome["report"].split("/", 3)[3])["Body"]
        .read()
    )
    assert report["kind"] == "ScoringJob" and report["sizing"]["instances"] == 5
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
    story = explain(scoring_stack.history(started["executionArn"]), execution)  # what on-call reads
    assert (story.kind, story.headline) == ("ScoringJob", "FAILED in ScoringManifestRejected")
    assert [p.path for p in story.failure.problems] == ["spec.model.name", "spec.model.name"]  # type: ignore[union-attr]
    assert story.next_step is not None and story.next_step.startswith("Fix every error listed")


@pytest.mark.parametrize("tag", ["media-eu", None])
def test_another_teams_model_under_a_role_the_pattern_matches_is_refused_naming_the_field_and_owner(
    scoring_stack: LocalStack, tag: str | None
) -> None:
    """Issue 45: team media-recs' role pattern (role/spotline/media-*) also matches media-eu's role;
    media-eu's model is refused by its spotline:team tag, not let through by the pattern."""
    ensure_role(scoring_stack.client("iam"), "arn:aws:iam::123456789012:role/spotline/media-eu-scoring", "media-eu")
    scoring_stack.client("sagemaker").create_model(
        ModelName="media-eu-ranker",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/spotline/media-eu-scoring",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11"},
        Tags=[{"Key": "spotline:team", "Value": tag}] if tag else [],
    )
    body = (PROJECT_ROOT / "examples" / "scoring" / "scores-on-upload.yaml").read_text()
    upload(
        scoring_stack,
        "manifests/media-recs/eu.yaml",
        body.replace("media-recs-ranker-2026-11", "media-eu-ranker").encode(),
    )
    (started,) = scoring_stack.deliver_events()
    execution = scoring_stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution["error"]) == ("FAILED", "ScoringManifestRejected")
    found = "it is media-eu's" if tag else "it has no such tag"
    assert (
        f"spec.model.name: model media-eu-ranker is not tagged spotline:team=media-recs ({found})" in execution["cause"]
    ), execution["cause"]
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
    detail = {
        "dataset": "media-pairs-nightly",
        "location": "s3://media-recs-data/pairs/2026-12-05/",
        "producedAt": "2026-12-05T00:00:00Z",
    }
    scoring_stack.put_dataset_event("Dataset Ready", detail, times=2)  # delivered twice: one run
    results = scoring_stack.deliver_events()
    names = {name for r in results for name in r.get("scoringRuns", [])}
    (name,) = names
    arn = f"arn:aws:states:us-east-1:123456789012:execution:spotline-local-scoring-run:{name}"
    execution = scoring_stack.wait_for_execution(arn, timeout=600)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert json.loads(execution["output"])["outcome"]["windowEnd"] == "2026-12-05T03:00:00Z"


def test_a_dataset_event_naming_a_prefix_outside_the_registered_input_is_refused(scoring_stack: LocalStack) -> None:
    """Issue 45: the location is the team's (media-recs-scores/) but not under the registered input
    (media-recs-data/pairs/): the night is refused naming the field, nothing is scored."""
    upload(
        scoring_stack,
        "manifests/media-recs/nightly-scores.yaml",
        (PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_bytes(),
    )
    scoring_stack.deliver_events()
    scoring_stack.client("s3").put_object(Bucket="media-recs-scores", Key="nightly/x.csv", Body=b"1\n")  # readable
    detail = {
        "dataset": "media-pairs-nightly",
        "location": "s3://media-recs-scores/nightly/",
        "producedAt": "2026-12-05T00:00:00Z",
    }
    scoring_stack.put_dataset_event("Dataset Ready", detail)
    (name,) = {name for r in scoring_stack.deliver_events() for name in r.get("scoringRuns", [])}
    arn = f"arn:aws:states:us-east-1:123456789012:execution:spotline-local-scoring-run:{name}"
    execution = scoring_stack.wait_for_execution(arn, timeout=600)
    assert (execution["status"], execution["error"]) == ("FAILED", "ScoringManifestRejected")
    assert (
        "spec.input.s3Uri: the Dataset Ready event's location s3://media-recs-scores/nightly/ is outside the input "
        "the manifest registered (s3://media-recs-data/pairs/)" in execution["cause"]
    ), execution["cause"]
    assert scoring_stack.standin.transforms.jobs == {}


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


OWN_MODEL = PROJECT_ROOT / "examples" / "scoring" / "scores-with-its-own-model.yaml"
OWN_ROLE = "arn:aws:iam::123456789012:role/spotline/media-scoring"
OWN_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11"
OWN_ARTIFACT = ("media-recs-scores", "models/ranker-2026-11/model.tar.gz")


def _registered_name() -> str:
    spec = validate_bytes(OWN_MODEL.read_bytes(), now=datetime(2026, 12, 4, tzinfo=UTC)).scoring
    assert spec is not None
    return registered_model_name(spec.team, spec.model)


def test_a_model_given_as_image_and_artifact_is_registered_once_and_scored_with(scoring_stack: LocalStack) -> None:
    ensure_role(scoring_stack.client("iam"), OWN_ROLE, "media-recs")
    ensure_image(scoring_stack.client("ecr"), OWN_IMAGE)
    scoring_stack.client("s3").put_object(Bucket=OWN_ARTIFACT[0], Key=OWN_ARTIFACT[1], Body=b"model.tar.gz")
    execution, _history = _run(scoring_stack, "scores-with-its-own-model.yaml", "manifests/media-recs/own.yaml")
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    name = _registered_name()
    model = scoring_stack.client("sagemaker").describe_model(ModelName=name)
    container = model["PrimaryContainer"]
    assert (model["ExecutionRoleArn"], container["Image"]) == (OWN_ROLE, OWN_IMAGE)
    assert container["ModelDataUrl"] == f"s3://{OWN_ARTIFACT[0]}/{OWN_ARTIFACT[1]}"
    jobs = scoring_stack.standin.transforms.jobs.values()
    assert jobs and {job.request["ModelName"] for job in jobs} == {name}
    # Uploaded again (a new version, a new run): the same parts, the same model, found and reused.
    scoring_stack.deliver_events()  # the first execution's end, to the end-of-execution rule
    again, _ = _run(scoring_stack, "scores-with-its-own-model.yaml", "manifests/media-recs/own.yaml")
    assert again["status"] == "SUCCEEDED", again.get("cause")


def test_a_model_whose_parts_are_not_the_teams_is_refused_naming_each_field(scoring_stack: LocalStack) -> None:
    # another team's role (the fixture's, tagged again); no image, no artifact
    scoring_stack.client("iam").tag_role(
        RoleName=OWN_ROLE.rsplit("/", 1)[1], Tags=[{"Key": "spotline:team", "Value": "ads"}]
    )
    execution, _history = _run(scoring_stack, "scores-with-its-own-model.yaml", "manifests/media-recs/own.yaml")
    assert (execution["status"], execution["error"]) == ("FAILED", "ScoringManifestRejected")
    cause = execution["cause"]
    assert "spec.model.roleArn: role media-scoring is not tagged spotline:team=media-recs" in cause
    assert "spec.model.image: repository ranker not found in registry 123456789012" in cause
    assert f"spec.model.artifact: s3://{OWN_ARTIFACT[0]}/{OWN_ARTIFACT[1]}: no object there" in cause
    names = {m["ModelName"] for m in scoring_stack.client("sagemaker").list_models()["Models"]}
    assert names == {"media-recs-ranker-2026-11"}  # nothing registered


def test_a_registered_models_name_held_by_other_content_is_refused_never_replaced(scoring_stack: LocalStack) -> None:
    ensure_role(scoring_stack.client("iam"), OWN_ROLE, "media-recs")
    ensure_image(scoring_stack.client("ecr"), OWN_IMAGE)
    s3 = scoring_stack.client("s3")
    s3.put_object(Bucket=OWN_ARTIFACT[0], Key=OWN_ARTIFACT[1], Body=b"model.tar.gz")
    s3.put_object(Bucket=OWN_ARTIFACT[0], Key="models/other.tar.gz", Body=b"another model")
    name = _registered_name()
    scoring_stack.client("sagemaker").create_model(
        ModelName=name,
        ExecutionRoleArn=OWN_ROLE,
        PrimaryContainer={"Image": OWN_IMAGE, "ModelDataUrl": f"s3://{OWN_ARTIFACT[0]}/models/other.tar.gz"},
    )
    execution, _history = _run(scoring_stack, "scores-with-its-own-model.yaml", "manifests/media-recs/own.yaml")
    assert (execution["status"], execution["error"]) == ("FAILED", "ScoringManifestRejected")
    assert (
        f"spec.model: a SageMaker model named {name} exists with another image, artifact or role" in execution["cause"]
    )
    container = scoring_stack.client("sagemaker").describe_model(ModelName=name)["PrimaryContainer"]
    assert container["ModelDataUrl"].endswith("models/other.tar.gz")  # untouched


def test_deleting_a_registered_scoring_manifest_stops_its_nights(scoring_stack: LocalStack) -> None:
    key = "manifests/media-recs/nightly-scores.yaml"
    upload(scoring_stack, key, (PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_bytes())
    (registered,) = scoring_stack.deliver_events()
    assert registered["status"] == "registered"
    scoring_stack.client("s3").delete_object(Bucket=scoring_stack.bucket, Key=key)  # a delete marker: kept versions
    scoring_stack.deliver_events()
    scoring_stack.client("s3").put_object(Bucket="media-recs-scores", Key="nightly/x.csv", Body=b"1\n")  # readable
    detail = {"dataset": "media-pairs-nightly", "producedAt": "2026-12-05T00:00:00Z"}
    scoring_stack.put_dataset_event("Dataset Ready", detail)
    (gate,) = scoring_stack.deliver_events()
    assert "scoringRuns" not in gate  # no night started
    table = scoring_stack.client("dynamodb")
    items = table.scan(TableName=scoring_stack.physical["DatasetsTable"])["Items"]
    assert not [i for i in items if i["sk"]["S"].startswith("SCORING#")]  # and it is unregistered


def _upload_backfill(
    stack: LocalStack, changes: dict[str, str] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body = (PROJECT_ROOT / "examples" / "scoring" / "scores-on-upload.yaml").read_text()
    for old, new in (changes or {}).items():
        assert old in body
        body = body.replace(old, new)
    upload(stack, "manifests/media-recs/backfill-scores.yaml", body.encode())
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"], timeout=600)
    return execution, stack.history(started["executionArn"])


def _every_input_scored_once(stack: LocalStack) -> None:
    """Each input object has its .out under the shard that scored it, and no job was stopped."""
    now = stack.clock.now().timestamp()
    jobs = stack.standin.transforms.jobs.values()
    assert {job.status(now) for job in jobs} == {"Completed"}
    outputs = {
        o["Key"]
        for page in stack.client("s3").get_paginator("list_objects_v2").paginate(Bucket="media-recs-scores")
        for o in page.get("Contents", [])
        if o["Key"].endswith(".out")
    }
    expected = set()
    for job in jobs:
        prefix = job.request["TransformOutput"]["S3OutputPath"].removeprefix("s3://media-recs-scores/")
        expected |= {f"{prefix}{key.rsplit('/', 1)[-1]}.out" for _bucket, key, _records in job.objects}
    assert len(expected) == SCORING_OBJECTS and outputs == expected


def test_a_night_due_in_a_week_ends_within_the_history_limit_with_every_shards_output(
    scoring_stack: LocalStack,
) -> None:
    # 40 M records at 15 records/s per instance, due in 7 days: 6 instances score for about 5 days. A look
    # every 2 minutes (9 history events) would reach Step Functions' 25,000 events in under 4 days, and
    # the execution would fail there (its transform jobs then stopped, keeping no output).
    scoring_stack.standin.transforms.weather = TransformWeather(records_per_second=15, start_delay=480)
    week = {'deadline: "2026-12-05T03:00:00Z"': 'deadline: "2026-12-12T00:00:00Z"', "Second: 1500": "Second: 15"}
    execution, history = _upload_backfill(scoring_stack, week)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    outcome = json.loads(execution["output"])["outcome"]
    assert (outcome["windowMet"], outcome["instances"]) == (True, 6), outcome
    assert outcome["finishedAt"] > "2026-12-09T00:00:00Z"  # days of scoring
    assert len(history) < 25_000
    waits = [e for e in history if e["type"] == "WaitStateEntered"]
    assert len(waits) < 2_000, len(waits)
    _every_input_scored_once(scoring_stack)


def test_a_night_sized_above_the_transform_quota_paces_with_it_and_ends_with_every_shard(
    scoring_stack: LocalStack,
) -> None:
    # Sized at 5 instances (3 h window); the account may run 2 ml.c5.2xlarge transform instances at once:
    # CreateTransformJob answers ResourceLimitExceeded for the rest, which start as the first ones end.
    scoring_stack.standin.transforms.instance_quota["ml.c5.2xlarge"] = 2
    execution, _history = _upload_backfill(scoring_stack)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    outcome = json.loads(execution["output"])["outcome"]
    assert outcome["instances"] == 5 and outcome["failedShards"] == [], outcome
    jobs = list(scoring_stack.standin.transforms.jobs.values())
    moments = sorted({t for job in jobs for t in (job.created, job.ended_at())})
    assert max(sum(1 for j in jobs if j.created <= t < j.ended_at()) for t in moments) == 2  # never above it
    _every_input_scored_once(scoring_stack)
    report = json.loads(
        scoring_stack.client("s3")
        .get_object(Bucket=scoring_stack.bucket, Key=outcome["report"].split("/", 3)[3])["Body"]
        .read()
    )
    # 2 instances cannot score 40 M records at 1,500/s in 3 h: late, and on-call was told while it ran.
    assert outcome["windowMet"] is False
    assert [n["type"] for n in report["notifications"]] == ["WindowAtRisk"]
