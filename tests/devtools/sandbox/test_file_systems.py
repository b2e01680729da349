"""Jobs that mount FSx for Lustre and EFS file systems in the sandbox: they run in the stack's
VPC, in the subnets that reach their file system (the request's VpcConfig says so), and another
team's, a missing one, one outside the stack's VPC, one whose security group shuts the jobs out
and a stack without a VPC are each refused naming spec.inputs[0].fileSystem and the reason."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_upload
from spotline.core.manifest import validate_bytes
from spotline.core.model import JobSpec
from spotline_dev.local.handles import LocalStack
from spotline_dev.local.stack import start_local_stack
from spotline_dev.local.template import PROJECT_ROOT
from spotline_dev.sandbox.account import prepare_account, team_allowance
from spotline_dev.sandbox.file_systems import play_file_systems
from spotline_dev.sandbox.replay import load_scenario, run_scenario
from spotline_dev.sandbox.scenario import ScenarioError
from spotline_dev.standin.file_systems import FileSystemRecord, MountTarget

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
FSX_MANIFEST = SCENARIOS / "manifests" / "train-from-fsx.yaml"
KEY = "manifests/search-ranking/train-from-fsx.yaml"


def _spec(path: Path = FSX_MANIFEST) -> JobSpec:
    scenario = load_scenario(SCENARIOS / "trains-from-fsx.yaml")
    spec = validate_bytes(path.read_bytes(), now=scenario.start).spec
    assert spec is not None
    return spec


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
