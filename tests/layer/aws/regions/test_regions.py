"""The AWS side of regions on a local stack with a peer region (us-west-2): which regions
ValidateResources lets a run use, the fleet's record of spot capacity, and a peer region's
reconciler asking a job's home region about its run."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from state_samples import manifest_state, regions_state, resources_state, training_state

from conftest import NOW, example_spec, team_policy_for
from spotline.aws.billing import billing
from spotline.aws.capacity import checking
from spotline.aws.common import clock
from spotline.aws.common.clients import in_region
from spotline.aws.regions import region_moves, regions
from spotline.aws.regions.regions import SIGHTINGS_TABLE, recent_sightings, record_sighting
from spotline.aws.state import progress
from spotline.aws.training import continuation, service_jobs
from spotline.aws.training.region_checks import plan_regions
from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.regions.regions import Sighting, arn_in_region
from spotline.core.spec.model import JobSpec
from spotline.core.training.service_jobs import EXECUTION_TAG, RUNNING_EXECUTION, KnownJobs
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import load_template, resources_of_type
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.sandbox.replicas import played_replicas, prepare_replicas
from spotline_dev.harness.standin import SpotWeather

PEER = "us-west-2"
EXECUTION = (
    "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:search-ranking-ranker-v2-1"
)


def _spec() -> JobSpec:
    return replace(example_spec(), regions=("us-east-1", PEER))


@pytest.fixture
def peered() -> Iterator[LocalStack]:
    spec = _spec()
    with start_local_stack(NOW, team_policy=team_policy_for(spec), peers={PEER: SpotWeather()}) as local:
        prepare_account(local.client, spec)
        yield local


def _queue(stack: LocalStack) -> str:
    (queue,) = resources_of_type(stack.template, "AWS::Batch::JobQueue")
    return stack.physical[queue]


def _prepared(stack: LocalStack, missing: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    spec = _spec()
    replicas = played_replicas(spec, "us-east-1", [PEER])
    prepare_replicas(lambda s, r: stack.session.client(s, region_name=r), spec, PEER, replicas, missing)
    return replicas


def test_a_region_with_every_replica_and_the_stacks_queue_is_allowed(peered: LocalStack) -> None:
    plan, problems = plan_regions(_spec(), "us-east-1", _prepared(peered), _queue(peered))
    assert problems == [] and tuple(plan.allowed) == ("us-east-1", PEER) and plan.excluded == ()


def test_a_replica_behind_its_home_prefix_leaves_the_region_out_with_the_numbers(peered: LocalStack) -> None:
    replicas = _prepared(peered)
    spec = _spec()
    bucket, _, prefix = spec.inputs[0].s3_uri.removeprefix("s3://").partition("/")
    peered.client("s3").put_object(Bucket=bucket, Key=f"{prefix}part-00002.parquet", Body=b"written after replication")
    plan, problems = plan_regions(spec, "us-east-1", replicas, _queue(peered))
    assert problems == [] and tuple(plan.allowed) == ("us-east-1",)
    (left_out,) = plan.excluded
    assert (left_out.region, left_out.field) == (PEER, "spec.inputs[0].s3Uri")
    assert "is behind: 3 of 4 objects" in left_out.reason


def test_a_replica_bucket_in_another_region_leaves_the_region_out(peered: LocalStack) -> None:
    replicas = _prepared(peered)
    spec = _spec()
    output = spec.output_s3_uri.removeprefix("s3://").partition("/")[0]
    replicas[f"s3://{output}/"] = {PEER: f"s3://{output}/"}  # the home bucket itself, in us-east-1
    plan, _ = plan_regions(spec, "us-east-1", replicas, _queue(peered))
    (left_out,) = plan.excluded
    assert left_out.field == "spec.output.s3Uri"
    assert left_out.reason == f"bucket {output} is in us-east-1, not {PEER}"


def test_a_region_list_without_home_is_refused_naming_the_field(peered: LocalStack) -> None:
    spec = replace(_spec(), regions=(PEER,))
    _, (problem,) = plan_regions(spec, "us-east-1", _prepared(peered), _queue(peered))
    assert problem.path == "spec.capacity.regions"
    assert problem.message.startswith("must include us-east-1, the region the manifest was dropped in")


def test_sightings_are_recorded_and_read_back_per_region_and_type_for_a_day(peered: LocalStack) -> None:
    with mock.patch.dict(os.environ, {SIGHTINGS_TABLE: peered.physical["CapacitySightingsTable"]}):
        record_sighting(Sighting(PEER, NOW, True, "ml.g5.2xlarge"), EXECUTION)
        record_sighting(Sighting(PEER, NOW - timedelta(days=2), False, "ml.g5.2xlarge"), EXECUTION)  # too old
        record_sighting(Sighting("us-east-1", NOW, False, "ml.g5.2xlarge", interruption=True), EXECUTION)
        record_sighting(Sighting(PEER, NOW, False, "ml.p4d.24xlarge"), EXECUTION)  # another type
        seen = recent_sightings(["us-east-1", PEER], "ml.g5.2xlarge", NOW + timedelta(minutes=1))
    assert sorted((s.region, s.spot, s.interruption) for s in seen) == [("us-east-1", False, True), (PEER, True, False)]


def test_a_job_of_many_instances_reads_only_the_sightings_that_tell_about_as_many(peered: LocalStack) -> None:
    """Capacity is all or nothing per job: spot for 8 instances was spot for 4, none for 2 was none
    for 4; spot for one says nothing of 4, and none for 16 says nothing either."""
    with mock.patch.dict(os.environ, {SIGHTINGS_TABLE: peered.physical["CapacitySightingsTable"]}):
        for spot, instances in ((True, 1), (True, 8), (False, 2), (False, 16)):
            at = NOW - timedelta(minutes=instances)
            record_sighting(Sighting(PEER, at, spot, "ml.p4d.24xlarge", instances=instances), EXECUTION)
        seen = recent_sightings([PEER], "ml.p4d.24xlarge", NOW + timedelta(minutes=1), instances=4)
        alone = recent_sightings([PEER], "ml.p4d.24xlarge", NOW + timedelta(minutes=1))
    assert sorted((s.spot, s.instances) for s in seen) == [(False, 2), (True, 8)]
    assert sorted((s.spot, s.instances) for s in alone) == [(True, 1), (True, 8)], "a lone node: any spot seen counts"


def test_a_peer_regions_reconciler_asks_the_jobs_home_region_about_its_run(
    peered: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, queue = _spec(), arn_in_region(_queue(peered), PEER)
    request = submit_service_job_request(spec, Attempt(EXECUTION, 1, "spot"), queue)
    with in_region(PEER):
        peered.session.client("batch", region_name=PEER).submit_service_job(**request)
    asked: list[str] = []

    def running(state_machine_arn: str, name: str) -> str:
        asked.append(state_machine_arn)
        return RUNNING_EXECUTION

    monkeypatch.setattr(service_jobs, "execution_status", running)
    monkeypatch.setattr(service_jobs, "jobs_known_to", lambda arn, name: KnownJobs(frozenset(), settled=False))
    peer_machine = f"arn:aws:states:{PEER}:123456789012:stateMachine:spotline-local-training-lifecycle"
    with in_region(PEER):
        found = service_jobs.sweep(queue, peer_machine, why="test")
    assert asked == ["arn:aws:states:us-east-1:123456789012:stateMachine:spotline-local-training-lifecycle"]
    assert found.stopped == [] and found.foreign == []  # its run is running at home: left alone
    assert json.loads(json.dumps([j.home for j in found.checked])) == ["us-east-1"]


# --- each read of a job or checkpoint in a peer region goes to that region ---------------------


def test_a_continuation_retags_an_attempt_in_a_peer_region_there(peered: LocalStack) -> None:
    queue = arn_in_region(_queue(peered), PEER)
    request = submit_service_job_request(_spec(), Attempt(EXECUTION, 1, "spot"), queue)
    peer_batch = peered.session.client("batch", region_name=PEER)
    job = peer_batch.submit_service_job(**request)
    tagged = continuation._retag({"training": training_state(jobArn=job["jobArn"])}, "search-ranking-ranker-v2-c1")
    assert tagged == [job["jobArn"]]
    assert peer_batch.describe_service_job(jobId=job["jobId"])["tags"][EXECUTION_TAG] == "search-ranking-ranker-v2-c1"


def _recording(monkeypatch: pytest.MonkeyPatch, module: Any, name: str = "client") -> list[tuple[Any, ...]]:
    """Record the arguments of `module.<name>` (still called)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(module, name)

    def record(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(module, name, record)
    return calls


def test_a_peer_attempts_checkpoint_is_sized_and_its_progress_read_in_the_peer_region(
    peered: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = replace(_spec(), checkpoint_s3_uri=f"s3://{peered.bucket}/west/checkpoints/")
    state = {
        "resources": resources_state(regions=regions_state(["us-east-1", PEER])),
        "training": training_state(region=PEER, previousAttempts=[]),
    }
    listed = _recording(monkeypatch, regions, "prefix_contents")
    monkeypatch.setattr(region_moves, "prefix_contents", regions.prefix_contents)
    region_moves.copy_seconds(regions.allowed_regions(state), here, PEER)
    assert listed == [(here.checkpoint_s3_uri, PEER)]
    read = _recording(monkeypatch, progress, "client")
    checking.progress_of(here, mock.Mock(training_seconds=0), [], PEER)
    assert read == [("s3", PEER)]
    read.clear()
    monkeypatch.setattr(billing, "spec_of", lambda state: here)
    monkeypatch.setattr(billing, "spec_at", lambda spec, region: spec)
    billing.bill_for_state({**state, "manifest": manifest_state()}, NOW)
    assert read == [("s3", PEER)]


def test_a_continuation_may_tag_training_jobs_at_home_and_in_each_peer_region() -> None:
    policies = load_template()["Resources"]["ContinueInNewExecutionFunction"]["Properties"]["Policies"]
    (statement,) = [s for p in policies for s in p["Statement"] if s["Action"] == "sagemaker:AddTags"]
    home, *peers = statement["Resource"]
    assert home == {"Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:training-job/*"}
    assert len(peers) == 3
    for index, peer in enumerate(peers):
        condition, sub, absent = peer["Fn::If"]
        assert condition == f"HasPeerRegion{index + 1}" and absent == {"Ref": "AWS::NoValue"}
        assert sub["Fn::Sub"][0] == "arn:${AWS::Partition}:sagemaker:${Peer}:${AWS::AccountId}:training-job/*"
        assert sub["Fn::Sub"][1] == {"Peer": {"Fn::Select": [index, {"Fn::Split": [",", {"Ref": "PeerRegions"}]}]}}


# --- the checkpoint copy, bounded per invocation -----------------------------------------------


def test_a_checkpoint_larger_than_one_invocations_share_is_copied_over_several(
    peered: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, west = f"s3://{peered.bucket}/ckpt/", f"s3://{peered.bucket}/west-ckpt/"
    s3 = peered.client("s3")
    for n in range(5):
        s3.put_object(Bucket=peered.bucket, Key=f"ckpt/shard-{n}.pt", Body=b"x" * (n + 1))
    monkeypatch.setattr(regions, "COPY_BATCH_OBJECTS", 2)
    shares = 0
    while True:
        try:
            copied = regions.copy_checkpoint(home, west, "us-east-1", "us-east-1")
            break
        except regions.CheckpointCopyIncomplete as incomplete:
            shares += 1
            assert "copied 2 objects" in str(incomplete)
    assert shares == 2  # 2 + 2 + 1 objects
    assert (copied.objects, copied.bytes) == (5, 15)
    listed = s3.list_objects_v2(Bucket=peered.bucket, Prefix="west-ckpt/")["Contents"]
    assert sorted(item["Key"] for item in listed) == [f"west-ckpt/shard-{n}.pt" for n in range(5)]


def test_a_copy_starts_no_object_after_the_first_past_its_time_budget(peered: LocalStack) -> None:
    s3 = peered.client("s3")
    for name in ("model.pt", "optimizer.pt"):
        s3.put_object(Bucket=peered.bucket, Key=f"ckpt/{name}", Body=b"weights")
    with pytest.raises(regions.CheckpointCopyIncomplete, match="copied 1 objects"):
        regions.copy_checkpoint(
            f"s3://{peered.bucket}/ckpt/", f"s3://{peered.bucket}/west/", "us-east-1", PEER, until=0.0
        )


def test_a_copys_seconds_are_read_on_the_handlers_clock_not_the_hosts(
    peered: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: the seconds were the host's (0.021, 0.038, 0.033 s on three replays of one scenario).
    On a clock that moves 4.5 s at each reading, the copy took 4.5 s, however long the host took."""
    peered.client("s3").put_object(Bucket=peered.bucket, Key="ckpt/model.pt", Body=b"weights")
    readings = iter(NOW + timedelta(seconds=4.5 * n) for n in range(100))
    monkeypatch.setattr(clock, "_source", lambda: next(readings))
    copied = regions.copy_checkpoint(f"s3://{peered.bucket}/ckpt/", f"s3://{peered.bucket}/w/", "us-east-1", PEER)
    assert (copied.objects, copied.seconds) == (1, 4.5)


def test_an_object_of_another_size_at_the_target_is_copied_again(peered: LocalStack) -> None:
    s3 = peered.client("s3")
    s3.put_object(Bucket=peered.bucket, Key="west-ckpt/model.pt", Body=b"an older checkpoint")
    s3.put_object(Bucket=peered.bucket, Key="ckpt/model.pt", Body=b"weights")
    regions.copy_checkpoint(f"s3://{peered.bucket}/ckpt/", f"s3://{peered.bucket}/west-ckpt/", "us-east-1", PEER)
    assert s3.get_object(Bucket=peered.bucket, Key="west-ckpt/model.pt")["Body"].read() == b"weights"
