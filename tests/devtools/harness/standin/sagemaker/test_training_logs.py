"""The CloudWatch Logs of the stand-in's training jobs: the lines each plan writes, up to the clock,
paging, time and pattern filters, and every other log group or stream left to moto.

Times follow fixture_rig: the training job is created at +30 s, its instances start (Downloading)
at +270 s and it trains from +330 s; with 10-minute checkpoints and 60 steps an hour, a step is a
minute of training and a checkpoint is written every 10 steps.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError

from conftest import run_upload
from devtools.harness.standin.fixture_rig import (
    CHECKPOINT,
    PAYLOAD_NAME,
    REGION,
    T0,
    Rig,
    RigFactory,
    assert_matches_shape,
    ms,
    training_payload,
)
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.batch.jobs import batch_training_job_name, service_job_id

GROUP = "/aws/sagemaker/TrainingJobs"
JOB = batch_training_job_name(PAYLOAD_NAME, service_job_id("123456789012", 0), 1)  # Batch's name of the rig's job
SAVED = f"checkpoint saved to {CHECKPOINT}"
STARTED = "Container started on spot instance ml.g5.2xlarge (host algo-1 of 1)"
# Spot interruptions after 1500 s and 2900 s of training in all: at +1830 s (the last checkpoint,
# step 20, was at +1530 s) and at +3530 s (step 40 at +3330 s); each restart is new instances.
TWICE = SpotWeather(interruptions=[1500, 2900])


def stream(seconds: float, host: int = 1) -> str:
    """The stream of the instances that started at T0 + seconds."""
    return f"{JOB}/algo-{host}-{int(T0.timestamp() + seconds)}"


INTERRUPTED_TWICE = [
    (270, stream(270), STARTED),
    (330, stream(270), "No checkpoint found: starting from step 0"),
    (930, stream(270), f"step 10/60: {SAVED}"),
    (1530, stream(270), f"step 20/60: {SAVED}"),
    (
        1830,
        stream(270),
        "Spot interruption notice: the instance is being reclaimed; 300 s of work since checkpoint step 20 is lost",
    ),
    (2070, stream(2070), STARTED),
    (2130, stream(2070), "Resuming from checkpoint step 20"),
    (2730, stream(2070), f"step 30/60: {SAVED}"),
    (3330, stream(2070), f"step 40/60: {SAVED}"),
    (
        3530,
        stream(2070),
        "Spot interruption notice: the instance is being reclaimed; 200 s of work since checkpoint step 40 is lost",
    ),
    (3770, stream(3770), STARTED),
    (3830, stream(3770), "Resuming from checkpoint step 40"),
    (4430, stream(3770), f"step 50/60: {SAVED}"),
    (5030, stream(3770), f"step 60/60: {SAVED}"),
    (5030, stream(3770), "Training completed: step 60/60; uploading the model"),
]


def logs_client(_rig: Rig) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    """A CloudWatch Logs client on the session the rig installed the stand-in on, and the raw
    bodies of its successful answers (botocore's parser drops unknown keys: check them raw)."""
    raw: list[tuple[str, dict[str, Any]]] = []

    def capture(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
        if response_dict["status_code"] == 200:
            raw.append((operation_model.name, json.loads(response_dict["body"] or b"{}")))

    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register("before-parse.cloudwatch-logs", capture)  # clients copy hooks when created
    return boto3.client("logs", region_name=REGION), raw


def lines(events: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    return [((e["timestamp"] - ms(0)) / 1000, e["logStreamName"], e["message"]) for e in events]


def read_all(logs: Any, **request: Any) -> list[dict[str, Any]]:
    """Every event FilterLogEvents pages through."""
    events: list[dict[str, Any]] = []
    while True:
        page = logs.filter_log_events(logGroupName=GROUP, **request)
        events += page["events"]
        if "nextToken" not in page:
            return events
        request["nextToken"] = page["nextToken"]


def submit_interval(rig: Rig) -> None:
    rig.submit(training_payload(interval_minutes=10))


def test_a_job_interrupted_twice_logs_each_start_in_a_stream_of_its_own(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, raw = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(6000)

    answer = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=f"{JOB}/")
    assert lines(answer["events"]) == INTERRUPTED_TWICE
    assert answer["searchedLogStreams"] == []  # what AWS returns since 2020
    assert "nextToken" not in answer
    assert len({e["eventId"] for e in answer["events"]}) == len(INTERRUPTED_TWICE)
    assert all(e["ingestionTime"] == e["timestamp"] for e in answer["events"])

    described = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=JOB)["logStreams"]
    assert [s["logStreamName"] for s in described] == [stream(270), stream(2070), stream(3770)]
    assert described[1] == {
        "logStreamName": stream(2070),
        "creationTime": ms(2070),
        "firstEventTimestamp": ms(2070),
        "lastEventTimestamp": ms(3530),
        "lastIngestionTime": ms(3530),
        "arn": f"arn:aws:logs:{REGION}:123456789012:log-group:{GROUP}:log-stream:{stream(2070)}",
        "storedBytes": 0,
    }
    latest = logs.describe_log_streams(logGroupName=GROUP, orderBy="LastEventTime", descending=True, limit=1)
    assert [s["logStreamName"] for s in latest["logStreams"]] == [stream(3770)]

    model = botocore.session.get_session().get_service_model("logs")
    assert {operation for operation, _ in raw} == {"FilterLogEvents", "DescribeLogStreams"}
    for operation, body in raw:
        assert_matches_shape(body, model.operation_model(operation).output_shape, operation)


def test_a_job_read_half_way_shows_only_the_lines_written_so_far(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, _ = logs_client(rig)
    submit_interval(rig)

    rig.clock.at(269)  # waiting for instances: no stream yet
    assert logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=f"{JOB}/")["events"] == []
    assert logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{JOB}/")["logStreams"] == []
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        logs.get_log_events(logGroupName=GROUP, logStreamName=stream(270))

    rig.clock.at(2100)  # restarted after the first interruption, not training yet
    assert lines(read_all(logs, logStreamNamePrefix=f"{JOB}/")) == INTERRUPTED_TWICE[:6]
    last = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{JOB}/")["logStreams"][-1]
    assert (last["logStreamName"], last["lastEventTimestamp"]) == (stream(2070), ms(2070))

    # Following one stream: the forward token brings only what is new, and stays put at the end.
    first = logs.get_log_events(logGroupName=GROUP, logStreamName=stream(2070), startFromHead=True)
    assert [e["message"] for e in first["events"]] == [STARTED]
    rig.clock.at(2800)
    more = logs.get_log_events(
        logGroupName=GROUP, logStreamName=stream(2070), startFromHead=True, nextToken=first["nextForwardToken"]
    )
    assert [e["message"] for e in more["events"]] == ["Resuming from checkpoint step 20", f"step 30/60: {SAVED}"]
    again = logs.get_log_events(
        logGroupName=GROUP, logStreamName=stream(2070), startFromHead=True, nextToken=more["nextForwardToken"]
    )
    assert (again["events"], again["nextForwardToken"]) == ([], more["nextForwardToken"])
    assert lines(read_all(logs, logStreamNamePrefix=f"{JOB}/")) == INTERRUPTED_TWICE[:8]


def test_a_stopped_job_ends_with_its_sigterm_checkpoint(make_rig: RigFactory) -> None:
    rig = make_rig()
    logs, _ = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(1000)  # 670 s of training: step 11
    rig.sagemaker.stop_training_job(TrainingJobName=JOB)
    rig.clock.at(1100)

    assert rig.training(JOB)["TrainingJobStatus"] == "Stopped"
    assert lines(read_all(logs, logStreamNames=[stream(270)])) == [
        (270, stream(270), STARTED),
        (330, stream(270), "No checkpoint found: starting from step 0"),
        (930, stream(270), f"step 10/60: {SAVED}"),
        (1000, stream(270), f"step 11/60: {SAVED}"),
        (1000, stream(270), "stopped (SIGTERM): last checkpoint saved at step 11"),
    ]


def test_a_failed_job_ends_with_its_failure_reason_and_one_failed_at_start_up_has_no_stream(
    make_rig: RigFactory,
) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=3600, fail_after=700))
    logs, _ = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(1100)

    failed = rig.training(JOB)
    assert failed["TrainingJobStatus"] == "Failed"
    assert lines(read_all(logs, logStreamNamePrefix=JOB))[-1] == (
        1030,
        stream(270),
        f"Training failed: {failed['FailureReason']}",
    )

    rig.standin.fail_next_attempt("ClientError: the training image could not be pulled")
    never = rig.submit(training_payload("never-started"), name="never-started")
    rig.clock.at(3000)
    assert rig.training(rig.training_name(1, never))["TrainingJobStatus"] == "Failed"
    assert read_all(logs, logStreamNamePrefix=f"{rig.training_name(1, never)}/") == []


def test_every_instance_has_a_stream_and_only_the_first_logs_checkpoints(make_rig: RigFactory) -> None:
    rig = make_rig()
    logs, _ = logs_client(rig)
    payload = training_payload(interval_minutes=30)
    payload["ResourceConfig"]["InstanceCount"] = 2
    rig.submit(payload)
    rig.clock.at(5000)

    events = lines(read_all(logs, logStreamNamePrefix=f"{JOB}/"))
    by_stream = {name: [m for _, s, m in events if s == name] for name in (stream(270, 1), stream(270, 2))}
    assert set(by_stream) == {s for _, s, _ in events}
    assert by_stream[stream(270, 2)] == [
        "Container started on spot instance ml.g5.2xlarge (host algo-2 of 2)",
        "No checkpoint found: starting from step 0",
        "Training completed: step 60/60; uploading the model",
    ]
    assert [m for m in by_stream[stream(270, 1)] if "checkpoint saved" in m] == [
        f"step 30/60: {SAVED}",
        f"step 60/60: {SAVED}",
    ]
    assert [t for t, _, _ in events] == sorted(t for t, _, _ in events)  # interleaved in time order


def test_paging_follows_limit_and_next_token_in_either_direction(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, _ = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(6000)

    first = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=JOB, limit=4)
    assert lines(first["events"]) == INTERRUPTED_TWICE[:4]
    assert lines(read_all(logs, logStreamNamePrefix=JOB, limit=4)) == INTERRUPTED_TWICE
    newest_first = read_all(logs, logStreamNamePrefix=JOB, limit=4, startFromHead=False)
    assert lines(newest_first) == INTERRUPTED_TWICE[::-1]
    with pytest.raises(ClientError, match="InvalidParameterException"):
        logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=JOB, nextToken="not-a-token")

    names: list[str] = []
    request: dict[str, Any] = {"logGroupName": GROUP, "logStreamNamePrefix": JOB, "limit": 2}
    while True:
        page = logs.describe_log_streams(**request)
        names += [s["logStreamName"] for s in page["logStreams"]]
        if "nextToken" not in page:
            break
        request["nextToken"] = page["nextToken"]
    assert names == [stream(270), stream(2070), stream(3770)]

    # GetLogEvents reads from the tail by default; the backward token pages towards the head.
    tail = logs.get_log_events(logGroupName=GROUP, logStreamName=stream(270), limit=2)
    assert [e["message"][:7] for e in tail["events"]] == ["step 20", "Spot in"]
    before = logs.get_log_events(
        logGroupName=GROUP, logStreamName=stream(270), limit=2, nextToken=tail["nextBackwardToken"]
    )
    assert [e["timestamp"] for e in before["events"]] == [ms(330), ms(930)]


def test_start_and_end_time_bound_the_events_inclusively(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, _ = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(6000)

    window = read_all(logs, logStreamNamePrefix=JOB, startTime=ms(1530), endTime=ms(2730))
    assert lines(window) == INTERRUPTED_TWICE[3:8]
    later = read_all(logs, logStreamNamePrefix=JOB, startTime=ms(1530) + 1)
    assert lines(later) == INTERRUPTED_TWICE[4:]
    in_stream = logs.get_log_events(
        logGroupName=GROUP, logStreamName=stream(270), startTime=ms(930), endTime=ms(1830), startFromHead=True
    )
    assert [e["timestamp"] for e in in_stream["events"]] == [ms(930), ms(1530)]  # GetLogEvents' end is exclusive


def test_filter_patterns_match_plain_terms_and_phrases_or_are_refused(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, _ = logs_client(rig)
    submit_interval(rig)
    rig.clock.at(6000)

    saved = read_all(logs, logStreamNamePrefix=JOB, filterPattern="checkpoint saved")
    assert [m for _, _, m in lines(saved)] == [m for _, _, m in INTERRUPTED_TWICE if SAVED in m]
    interrupted = read_all(logs, logStreamNamePrefix=JOB, filterPattern='"Spot interruption" lost')
    assert [t for t, _, _ in lines(interrupted)] == [1830, 3530]
    assert read_all(logs, logStreamNamePrefix=JOB, filterPattern="SIGTERM") == []
    for unsupported in ("?ERROR ?Failed", "-checkpoint", '{ $.level = "error" }', "[ip, user]", "%step [0-9]+%"):
        with pytest.raises(ClientError, match="InvalidParameterException"):
            logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=JOB, filterPattern=unsupported)
    with pytest.raises(ClientError, match="InvalidParameterException"):
        logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=JOB, logStreamNames=[stream(270)])


def test_other_log_groups_and_streams_are_left_to_moto(make_rig: RigFactory) -> None:
    rig = make_rig(TWICE)
    logs, _ = logs_client(rig)
    for group, name in (("/aws/lambda/spotline-intake", "2026/11/29/[$LATEST]abc"), (GROUP, "other-job/algo-1-1")):
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName=name)
        logs.put_log_events(
            logGroupName=group, logStreamName=name, logEvents=[{"timestamp": ms(10), "message": f"from moto: {name}"}]
        )
    submit_interval(rig)
    rig.clock.at(6000)

    lambda_events = logs.filter_log_events(logGroupName="/aws/lambda/spotline-intake")["events"]
    assert [e["message"] for e in lambda_events] == ["from moto: 2026/11/29/[$LATEST]abc"]
    other = logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix="other-job/")["events"]
    assert [e["message"] for e in other] == ["from moto: other-job/algo-1-1"]
    described = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix="other")["logStreams"]
    assert [s["logStreamName"] for s in described] == ["other-job/algo-1-1"]
    ours = logs.filter_log_events(logGroupName=GROUP, logStreamNames=[stream(270)])["events"]
    assert len(ours) == 5


def test_the_local_stack_serves_a_training_jobs_log_beside_moto_s_log_groups(
    stack: LocalStack, example_manifest: bytes
) -> None:
    execution, _ = run_upload(stack, example_manifest)
    assert execution["status"] == "SUCCEEDED"
    (job,) = stack.standin.jobs
    name = job.training_job_name
    logs = stack.client("logs")

    streams = logs.describe_log_streams(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["logStreams"]
    assert [s["logStreamName"].rpartition("-")[0] for s in streams] == [f"{name}/algo-1"]
    messages = [
        e["message"] for e in logs.filter_log_events(logGroupName=GROUP, logStreamNamePrefix=f"{name}/")["events"]
    ]
    assert messages[0].startswith("Container started on spot instance")
    assert messages[-1].startswith("Training completed")

    logs.create_log_group(logGroupName="/aws/lambda/spotline-local-Intake")
    logs.create_log_stream(logGroupName="/aws/lambda/spotline-local-Intake", logStreamName="s")
    logs.put_log_events(
        logGroupName="/aws/lambda/spotline-local-Intake",
        logStreamName="s",
        logEvents=[{"timestamp": int(stack.clock.now().timestamp() * 1000), "message": "START RequestId: 1"}],
    )
    read_back = logs.filter_log_events(logGroupName="/aws/lambda/spotline-local-Intake")["events"]
    assert [e["message"] for e in read_back] == ["START RequestId: 1"]


def test_a_cluster_repair_is_logged_in_the_same_streams_by_every_host(make_rig: RigFactory) -> None:
    """A GPU failure after 1500 s of training (+1830 s; step 20 saved at +1530 s): the repair keeps the
    instances, so no new stream; training resumes from step 20 after the repair's 600 s."""
    rig = make_rig(behaviour=TrainingBehaviour(duration=3600, hardware_faults=(1500,)))
    logs, _ = logs_client(rig)
    payload = training_payload(interval_minutes=10)
    payload["ResourceConfig"]["InstanceCount"] = 2
    rig.submit(payload)
    rig.clock.at(6000)

    events = lines(read_all(logs, logStreamNamePrefix=f"{JOB}/"))
    assert {s for _, s, _ in events} == {stream(270, 1), stream(270, 2)}
    assert [(t, m) for t, s, m in events if s == stream(270, 2)] == [
        (270, "Container started on spot instance ml.g5.2xlarge (host algo-2 of 2)"),
        (330, "No checkpoint found: starting from step 0"),
        (1830, "Training stopped: a GPU of algo-1 failed; 300 s of work since checkpoint step 20 is lost"),
        (2430, "Cluster repaired: resuming from checkpoint step 20"),
        (2430 + 2400, "Training completed: step 60/60; uploading the model"),
    ]
