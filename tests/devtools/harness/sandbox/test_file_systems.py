"""Jobs that mount FSx for Lustre and EFS file systems in the sandbox: they run in the stack's
VPC, in the subnets that reach their file system (the request's VpcConfig says so), and another
team's, a missing one, one outside the stack's VPC, one whose security group shuts the jobs out
and a stack without a VPC are each refused naming spec.inputs[0].fileSystem and the reason."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from builders import spec_of
from conftest import run_upload
from spotline.core.spec.model import JobSpec
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance
from spotline_dev.harness.sandbox.file_systems import play_file_systems
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.sandbox.replicas import list_replica_file_systems, play_replicas, played_replicas
from spotline_dev.harness.sandbox.runs import peer_weathers, weather_of
from spotline_dev.harness.sandbox.scenario import ScenarioError
from spotline_dev.harness.standin.file_systems import FileSystemRecord, MountTarget

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
FSX_MANIFEST = SCENARIOS / "manifests" / "train-from-fsx.yaml"
KEY = "manifests/search-ranking/train-from-fsx.yaml"


def _spec(path: Path = FSX_MANIFEST) -> JobSpec:
    return spec_of(path.read_bytes(), load_scenario(SCENARIOS / "trains-from-fsx.yaml").start)


@pytest.fixture
def in_vpc() -> Iterator[LocalStack]:
    spec = _spec()
    start = load_scenario(SCENARIOS / "trains-from-fsx.yaml").start
    with start_local_stack(start, team_policy={"teams": {spec.team: team_allowance(spec)}}, network=True) as stack:
        prepare_account(stack.client, spec)
        yield stack


def _payload(stack: LocalStack) -> dict[str, Any]:
    (job,) = stack.standin.jobs
    described = stack.client("batch").describe_service_job(jobId=job.job_id)
    return json.loads(described["serviceRequestPayload"])  # type: ignore[no-any-return]


def test_a_job_on_fsx_for_lustre_runs_in_the_subnet_of_its_file_systems_zone(in_vpc: LocalStack) -> None:
    play_file_systems(in_vpc, _spec())
    execution, _history = run_upload(in_vpc, FSX_MANIFEST.read_bytes(), key=KEY)
    assert execution["status"] == "SUCCEEDED"
    payload = _payload(in_vpc)
    network = in_vpc.network
    assert payload["VpcConfig"] == {
        "Subnets": [network["subnets"]["us-east-1a"]],
        "SecurityGroupIds": [network["group"]],
    }
    (channel,) = [c for c in payload["InputDataConfig"] if c["ChannelName"] == "train"]
    assert channel["DataSource"]["FileSystemDataSource"]["FileSystemType"] == "FSxLustre"
    assert channel["InputMode"] == "File"


def test_a_file_system_outside_the_stacks_vpc_is_refused(in_vpc: LocalStack) -> None:
    ec2 = in_vpc.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.30.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]["SubnetId"]
    channel = _spec().inputs[0]
    in_vpc.file_systems.register(  # type: ignore[union-attr]
        FileSystemRecord(
            str(channel.file_system_id), "fsx-lustre", vpc, [MountTarget(subnet, vpc, "us-east-1a")], "abcdwbmv"
        )
    )
    execution, _history = run_upload(in_vpc, FSX_MANIFEST.read_bytes(), key=KEY)
    assert execution["status"] == "FAILED"
    assert (
        f"spec.inputs[0].fileSystem.id: {channel.file_system_id} is reached from {vpc} in us-east-1a"
        in execution["cause"]
    )


def test_a_file_system_whose_security_group_shuts_out_the_stacks_jobs_is_refused(in_vpc: LocalStack) -> None:
    play_file_systems(in_vpc, _spec(), closed=["spec.inputs[0].fileSystem"])
    execution, _history = run_upload(in_vpc, FSX_MANIFEST.read_bytes(), key=KEY)
    assert (execution["status"], execution["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.inputs[0].fileSystem.id: fs-0123456789abcdef0's security groups (sg-" in execution["cause"]
    assert (
        f"do not admit TCP 988 and 1018-1023 (Lustre) from the stack's TrainingSecurityGroupIds "
        f"({in_vpc.network['group']}) or 10.20.1.0/24: ports 988, 1018-1023 closed" in execution["cause"]
    )
    assert not in_vpc.standin.jobs


def test_the_sandbox_runs_a_job_on_efs_and_refuses_another_teams_or_a_missing_file_system(tmp_path: Path) -> None:
    (efs,) = run_scenario(load_scenario(SCENARIOS / "trains-from-efs.yaml"))["executions"]
    assert efs["status"] == "SUCCEEDED"
    (other,) = run_scenario(load_scenario(SCENARIOS / "another-teams-file-system.yaml"))["executions"]
    assert (other["status"], other["error"]) == ("FAILED", "ResourceValidationFailed")
    assert (
        "spec.inputs[0].fileSystem.id: fs-0123456789abcdef0 is not a file system team search-ranking may mount"
        in (other["cause"])
    )
    missing = tmp_path / "missing.yaml"
    scenario = {"name": "missing", "start": "2026-11-29T08:00:00Z", "manifests": [str(FSX_MANIFEST)]}
    missing.write_text(json.dumps({**scenario, "missing": ["spec.inputs[0].fileSystem"]}))
    (gone,) = run_scenario(load_scenario(missing))["executions"]
    assert (
        "spec.inputs[0].fileSystem.id: fs-0123456789abcdef0 is not an FSx for Lustre file system of this region"
        in (gone["cause"])
    )


def test_a_stack_without_a_vpc_refuses_a_file_system_channel() -> None:
    spec = _spec()
    start = load_scenario(SCENARIOS / "trains-from-fsx.yaml").start
    with start_local_stack(start, team_policy={"teams": {spec.team: team_allowance(spec)}}) as stack:
        prepare_account(stack.client, spec)
        execution, _history = run_upload(stack, FSX_MANIFEST.read_bytes(), key=KEY)
    assert execution["status"] == "FAILED"
    assert "spec.inputs[0].fileSystem: a file system is mounted only by a job in a VPC" in execution["cause"]


def test_a_zone_without_spot_holds_the_job_pinned_there_and_not_the_one_that_reaches_both_zones() -> None:
    fsx, efs = run_scenario(load_scenario(SCENARIOS / "zone-without-spot.yaml"))["executions"]
    assert (fsx["status"], efs["status"]) == ("SUCCEEDED", "SUCCEEDED")
    # 8 h of training: on EFS it starts at once in us-east-1b; on FSx it waits out us-east-1a's day.
    assert efs["trainingEndedAt"] < "2026-11-29T17:00:00Z"
    assert fsx["trainingEndedAt"] > "2026-11-30T16:00:00Z"


@pytest.mark.parametrize(
    ("zones", "manifest", "message"),
    [
        ({"us-east-1a": {}}, "train-from-efs.yaml", None),
        ({"us-east-1c": {}}, "train-from-efs.yaml", "zones.us-east-1c: must be zone a or b of a Region"),
        ({"us-west-2a": {}}, "train-from-efs.yaml", "zones.us-west-2a: the sandbox's VPC has subnets in us-east-1a"),
        ({"us-east-1a": {}}, "../../manifests/ranker-v2.yaml", "zones: a zone's capacity reaches only the jobs"),
    ],
)
def test_scenario_zones_name_the_stacks_zones_and_need_a_job_in_its_vpc(
    tmp_path: Path, zones: dict[str, Any], manifest: str, message: str | None
) -> None:
    path = tmp_path / "zones.yaml"
    scenario = {"name": "z", "start": "2026-11-29T08:00:00Z", "manifests": [str(SCENARIOS / "manifests" / manifest)]}
    path.write_text(json.dumps({**scenario, "zones": zones}))
    if message is None:
        assert run_scenario(load_scenario(path))["executions"][0]["status"] == "SUCCEEDED"
        return
    with pytest.raises(ScenarioError, match=re.escape(message)):
        run_scenario(load_scenario(path))


REGIONS_SCENARIO = SCENARIOS / "fsx-replica-in-another-region.yaml"
REGIONS_MANIFEST = SCENARIOS / "manifests" / "train-from-fsx-regions.yaml"


@pytest.fixture
def two_regions() -> Iterator[LocalStack]:
    with _two_regions() as stack:
        yield stack


@contextmanager
def _two_regions(*, replica_listed: bool = True) -> Iterator[LocalStack]:
    """The stack in us-east-1 (no spot for 30 h) and us-west-2, each with a VPC, and the team's
    file system in us-east-1 with its replica in us-west-2, as the sandbox plays them (the replica
    in the team's fileSystems unless not `replica_listed`)."""
    scenario = load_scenario(REGIONS_SCENARIO)
    spec = _spec(REGIONS_MANIFEST)
    entry = team_allowance(spec) | {"replicas": played_replicas(spec, "us-east-1", scenario.regions)}
    if replica_listed:
        list_replica_file_systems(entry)
    with start_local_stack(
        scenario.start,
        team_policy={"teams": {spec.team: entry}},
        network=True,
        weather=weather_of(scenario),
        peers=peer_weathers(scenario),
    ) as stack:
        prepare_account(stack.client, spec)
        play_file_systems(stack, spec)
        play_replicas(stack, scenario, spec, entry["replicas"])
        yield stack


def test_an_attempt_in_another_region_mounts_the_teams_replica_there_from_that_stacks_subnet(
    two_regions: LocalStack,
) -> None:
    execution, _history = run_upload(two_regions, REGIONS_MANIFEST.read_bytes(), key=KEY)
    assert execution["status"] == "SUCCEEDED"
    (job,) = two_regions.peers["us-west-2"].jobs
    batch = two_regions.session.client("batch", region_name="us-west-2")
    payload = json.loads(batch.describe_service_job(jobId=job.job_id)["serviceRequestPayload"])
    peer = two_regions.peer_networks["us-west-2"]
    (replica,) = [
        uri
        for prefix, there in played_replicas(_spec(REGIONS_MANIFEST), "us-east-1", ["us-west-2"]).items()
        if prefix.startswith("fsx://")
        for uri in there.values()
    ]
    replica_id, mount = replica.split("/")[2], replica.split("/")[3]
    assert payload["VpcConfig"] == {"Subnets": [peer["subnets"]["us-west-2a"]], "SecurityGroupIds": [peer["group"]]}
    (channel,) = [c for c in payload["InputDataConfig"] if c["ChannelName"] == "train"]
    source = channel["DataSource"]["FileSystemDataSource"]
    assert (source["FileSystemId"], source["DirectoryPath"]) == (replica_id, f"/{mount}/clicks/2026-11-28/train")


def test_a_region_without_the_file_systems_replica_is_left_out_and_the_job_waits_at_home(tmp_path: Path) -> None:
    path = tmp_path / "no-replica.yaml"
    raw = REGIONS_SCENARIO.read_text().replace("manifests/", f"{SCENARIOS}/manifests/")
    path.write_text(raw + '    missing: ["spec.inputs[0].fileSystem"]\n')
    summary = run_scenario(load_scenario(path))
    (run,) = summary["executions"]
    assert set(run["regions"]) == {"us-east-1"}  # its attempts all at home: us-west-2 was left out
    assert run["status"] == "SUCCEEDED"


def _resources(history: list[dict[str, Any]]) -> dict[str, Any]:
    (exited,) = [
        e["stateExitedEventDetails"]
        for e in history
        if e.get("stateExitedEventDetails", {}).get("name") == "ValidateResources"
    ]
    return json.loads(exited["output"])["resources"]  # type: ignore[no-any-return]


def test_validate_resources_names_the_subnets_a_replica_pins_the_job_to_in_each_region(two_regions: LocalStack) -> None:
    _execution, history = run_upload(two_regions, REGIONS_MANIFEST.read_bytes(), key=KEY)
    resources = _resources(history)
    peer = two_regions.peer_networks["us-west-2"]["subnets"]["us-west-2a"]
    assert resources["regions"]["allowed"] == ["us-east-1", "us-west-2"]
    assert resources["regions"]["subnets"] == {"us-west-2": [peer]}
    assert resources["summary"].endswith(f"; in us-west-2 to {peer}")


def test_a_replica_the_team_may_not_mount_leaves_its_region_out() -> None:
    with _two_regions(replica_listed=False) as stack:
        _execution, history = run_upload(stack, REGIONS_MANIFEST.read_bytes(), key=KEY)
    (left_out,) = _resources(history)["regions"]["excluded"]
    assert left_out["region"] == "us-west-2" and left_out["field"] == "spec.inputs[0].fileSystem"
    assert left_out["reason"].endswith("is not a file system the team may mount")
