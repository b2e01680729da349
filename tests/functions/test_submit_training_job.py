"""SubmitTrainingJob across regions, on a local stack with a peer region: a run's first spot
attempt goes where the fleet saw spot, and resumes there from a copy of the checkpoint an earlier
run of the job left at home."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from state_samples import manifest_state, regions_state, resources_state

from conftest import NOW, example_spec, team_policy_for
from spotline.aws.common.clients import split_s3_uri
from spotline.aws.manifest.spec_store import store_spec
from spotline.aws.training.attempts import network_settings
from spotline.core.spec.model import JobSpec
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.sandbox.replicas import played_replicas, prepare_replicas
from spotline_dev.harness.standin import SpotWeather

PEER = "us-west-2"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:ranker-v2-1"


def _spec() -> JobSpec:
    return replace(example_spec(), regions=("us-east-1", PEER))


@pytest.fixture
def peered() -> Iterator[LocalStack]:
    spec = _spec()
    policy = json.loads(team_policy_for(spec))
    replicas = played_replicas(spec, "us-east-1", [PEER])
    policy["teams"][spec.team]["replicas"] = replicas
    with start_local_stack(NOW, team_policy=json.dumps(policy), peers={PEER: SpotWeather()}) as local:
        prepare_account(local.client, spec)
        prepare_replicas(lambda s, r: local.session.client(s, region_name=r), spec, PEER, replicas)
        yield local


def _sighted(stack: LocalStack, region: str, spot: bool) -> None:
    table = stack.client("dynamodb")
    table.put_item(
        TableName=stack.physical["CapacitySightingsTable"],
        Item={
            "pk": {"S": f"{region}#{_spec().instance_type}"},
            "sk": {"S": f"{(NOW - timedelta(minutes=5)).isoformat()}#other-run"},
            "spot": {"BOOL": spot},
            "interruption": {"BOOL": False},
        },
    )


def test_a_first_attempt_goes_where_spot_was_seen_and_resumes_from_the_checkpoint_left_at_home(
    peered: LocalStack,
) -> None:
    spec = _spec()
    assert spec.checkpoint_s3_uri
    bucket, prefix = split_s3_uri(spec.checkpoint_s3_uri)
    peered.client("s3").put_object(Bucket=bucket, Key=f"{prefix}progress.json", Body=b'{"step": 40, "totalSteps": 100}')
    _sighted(peered, "us-east-1", False)
    _sighted(peered, PEER, True)
    state = {
        "manifest": manifest_state(spec, store_spec(peered.bucket, EXECUTION, spec).to_state()),
        "resources": resources_state(regions=regions_state(["us-east-1", PEER])),
    }
    training = peered.invoke("SubmitTrainingJobFunction", {"execution": EXECUTION, "input": state})
    assert training["region"] == PEER
    assert training["regionChoice"].startswith(f"{PEER}: about ")
    copy = training["checkpointCopy"]
    assert (copy["fromRegion"], copy["toRegion"], copy["objects"]) == ("us-east-1", PEER, 1)
    replica_bucket, replica_prefix = split_s3_uri(copy["to"])
    copied = peered.session.client("s3", region_name=PEER).get_object(
        Bucket=replica_bucket, Key=f"{replica_prefix}progress.json"
    )
    assert json.loads(copied["Body"].read()) == {"step": 40, "totalSteps": 100}
    (job,) = peered.peers[PEER].jobs  # submitted on the peer's namesake queue
    assert job.status in ("SUBMITTED", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING")


def test_a_job_that_mounts_file_systems_runs_only_in_the_subnets_that_reach_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ValidateResources' `$.resources.subnets` (the stack's subnets in the file systems' zones)
    narrow the VpcConfig; without them the stack's subnets are used as they are."""
    monkeypatch.setenv("TRAINING_SUBNET_IDS", "subnet-0aaaaaaa,subnet-0bbbbbbb")
    monkeypatch.setenv("TRAINING_SECURITY_GROUP_IDS", "sg-0ccccccc")
    settings = network_settings
    pinned = settings({"resources": resources_state(subnets=["subnet-0bbbbbbb"])}, "us-east-1")
    assert (pinned.subnet_ids, pinned.security_group_ids) == (("subnet-0bbbbbbb",), ("sg-0ccccccc",))
    assert settings({"resources": resources_state()}, "us-east-1").subnet_ids == ("subnet-0aaaaaaa", "subnet-0bbbbbbb")
