"""Issue 49: many nodes, one deadline. A 4-node FSDP job over EFA runs each attempt in one zone of
the stack's subnets, is interrupted mid-save (the reclaimed node's shards never reach S3), moves to
the next zone and resumes from the newest step whose shards are all there, and meets its deadline
billed for four instances. A job asking EFA of a type without it, or a stack whose security groups
shut its instances out of each other, is refused naming the field, through a real run (so every
EC2 call ValidateResources makes is checked against its role)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders import spec_of
from conftest import run_upload
from spotline.core.spec import catalog
from spotline.core.spec.model import JobSpec
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.peers import every_job, every_ledger
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import played_capacity, prepare_account, team_allowance
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.runs import weather_of
from spotline_dev.harness.sandbox.scenario import load_scenario
from spotline_dev.harness.standin.base.spot_weather import TrainingBehaviour

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
SCENARIO = load_scenario(SCENARIOS / "distributed-fsdp-efa.yaml")
MANIFEST = SCENARIOS / "manifests" / "llm-fsdp-4-nodes.yaml"
KEY = "manifests/nlp/llm-fsdp-4-nodes.yaml"
RANKS = 4 * 8  # four ml.p4d.24xlarge, eight GPUs each


def _spec(body: bytes | None = None) -> JobSpec:
    return spec_of(body or MANIFEST.read_bytes(), SCENARIO.start)


@pytest.fixture
def cluster() -> Iterator[LocalStack]:
    spec = _spec()
    with start_local_stack(
        SCENARIO.start,
        team_policy={"teams": {spec.team: team_allowance(spec)}},
        network=True,
        weather=weather_of(SCENARIO),
        behaviour=lambda _request: TrainingBehaviour(duration=float(spec.expected_duration_seconds or 0)),
        capacity=played_capacity([spec], None),
    ) as stack:
        prepare_account(stack.client, spec)
        yield stack


def _payloads(stack: LocalStack) -> list[dict[str, Any]]:
    batch = stack.client("batch")
    return [
        json.loads(batch.describe_service_job(jobId=job.job_id)["serviceRequestPayload"]) for job in every_job(stack)
    ]


def _markers(stack: LocalStack) -> dict[int, int]:
    """Per checkpoint step in S3, how many ranks' markers are there."""
    s3 = stack.client("s3")
    found: dict[int, int] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="nlp-checkpoints", Prefix="llm-fsdp/"):
        for item in page.get("Contents", []):
            parts = item["Key"].split("/")
            if len(parts) == 4 and parts[2] == "done":
                step = int(parts[1].removeprefix("checkpoint-"))
                found[step] = found.get(step, 0) + 1
    return found


def test_a_4_node_fsdp_job_runs_an_attempt_per_zone_and_resumes_from_a_complete_step(cluster: LocalStack) -> None:
    execution, history = run_upload(cluster, MANIFEST.read_bytes(), key=KEY)
    assert execution["status"] == "SUCCEEDED"

    subnets = cluster.network["subnets"]
    first, second = _payloads(cluster)
    assert first["VpcConfig"]["Subnets"] == [subnets["us-east-1a"]]
    assert second["VpcConfig"]["Subnets"] == [subnets["us-east-1b"]]
    for payload in (first, second):
        assert payload["ResourceConfig"]["InstanceCount"] == 4
        assert payload["InfraCheckConfig"] == {"EnableInfraCheck": True}
        assert payload["Environment"]["SPOTLINE_LAUNCHER"] == "torchrun"  # a custom image starts its ranks

    output = json.loads(execution["output"])
    training = output["training"]
    assert training["zone"] == "us-east-1b"
    assert "no spot capacity of ml.p4d.24xlarge in us-east-1a" in training["zoneChoice"]
    assert [a.get("zone") for a in training["previousAttempts"]] == ["us-east-1a"]
    moves = [e for e in history if "move-to-another-zone" in json.dumps(e, default=str)]
    assert moves, "the check that moved the job said so"

    # The interruption tore one step: 3 of 4 nodes' shards reached S3. Never resumed.
    markers = _markers(cluster)
    torn = [step for step, count in markers.items() if count != RANKS]
    assert len(torn) == 1 and markers[torn[0]] == RANKS - 8
    (job,) = every_job(cluster)[1:]
    resumed = job.attempts[0].restored_from_step
    assert resumed is not None and resumed < torn[0] and markers[resumed] == RANKS

    # Billed for four instances: the ledger's entries are of 4 and the report counts them.
    (ledger,) = every_ledger(cluster).values()
    assert {entry.instance_count for entry in ledger.entries} == {4}
    figures = output["outcome"]["figures"]
    assert figures["billable_seconds"] == ledger.billed_seconds  # per instance, as SageMaker reports it
    price = catalog.known_facts("ml.p4d.24xlarge")
    assert price is not None and price.usd_per_hour is not None
    # SageMaker bills BillableTimeInSeconds per instance at the on-demand rate (spot: a shorter time).
    assert figures["cost_usd"] == pytest.approx(price.usd_per_hour * 4 * ledger.billed_seconds / 3600, abs=0.01)


def test_efa_on_a_type_without_it_is_refused_naming_the_field(cluster: LocalStack) -> None:
    body = MANIFEST.read_bytes().replace(b"instanceType: ml.p4d.24xlarge", b"instanceType: ml.g5.2xlarge")
    prepare_account(cluster.client, _spec(body))
    execution, _history = run_upload(cluster, body, key=KEY)
    assert (execution["status"], execution["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.resources.instanceType: ml.g5.2xlarge has no Elastic Fabric Adapter" in execution["cause"]
    assert not cluster.standin.jobs


def test_security_groups_that_shut_the_instances_out_of_each_other_are_refused(cluster: LocalStack) -> None:
    group = cluster.network["group"]
    itself = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
    cluster.client("ec2").revoke_security_group_egress(GroupId=group, IpPermissions=itself)
    execution, _history = run_upload(cluster, MANIFEST.read_bytes(), key=KEY)
    assert (execution["status"], execution["error"]) == ("FAILED", "ResourceValidationFailed")
    assert (
        f"(stack): the stack's TrainingSecurityGroupIds ({group}) do not admit themselves (outbound closed): "
        "a job on 4 instances needs all traffic to and from themselves (EFA)" in execution["cause"]
    )
    assert not cluster.standin.jobs


def test_across_regions_each_attempt_of_many_instances_runs_in_one_zone_of_its_region(tmp_path: Path) -> None:
    """The stack in the peer region pins its attempts too: ValidateResources read its subnets there."""
    manifest = tmp_path / "llm-regions.yaml"
    text = MANIFEST.read_text().replace(
        "    strategy: spot-first\n", "    strategy: spot-first\n    regions: [us-east-1, us-west-2]\n"
    )
    manifest.write_text(text)
    scenario = tmp_path / "regions.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "distributed-across-regions",
                "start": "2026-12-01T00:00:00Z",
                "manifests": [str(manifest)],
                "spot": {"startDelay": "5m", "capacityGaps": [{"from": "1h", "to": "1d"}]},
                "regions": {"us-west-2": {"spot": {"startDelay": "5m", "capacityGaps": []}}},
            }
        )
    )
    (run,) = run_scenario(load_scenario(scenario))["executions"]
    assert (run["status"], run["deadlineMet"]) == ("SUCCEEDED", True)
    assert run["regions"] == ["us-east-1", "us-west-2"]
    assert run["zones"] == ["us-east-1a", "us-west-2a"]


PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nlp-p4d-december"


def _on_a_plan(tmp_path: Path, zone: str, named: str = PLAN_ARN) -> dict[str, Any]:
    """The 4-node job naming the team's plan (4 x p4d in `zone`), with no spot all day: it falls
    back onto the plan at the last safe moment."""
    manifest = tmp_path / "llm-on-a-plan.yaml"
    plan = f"    trainingPlan: {named}\n"
    manifest.write_text(MANIFEST.read_text().replace("    strategy: spot-first\n", f"    strategy: spot-first\n{plan}"))
    scenario = tmp_path / "on-a-plan.yaml"
    tags = {"spotline:team": "nlp"}
    reserved = {"name": "nlp-p4d-december", "instanceType": "ml.p4d.24xlarge", "instances": 4, "from": 0, "to": "3d"}
    scenario.write_text(
        json.dumps(
            {
                "name": "distributed-on-a-plan",
                "start": "2026-12-01T00:00:00Z",
                "manifests": [str(manifest)],
                "spot": {"startDelay": "5m", "capacityGaps": [{"from": 0, "to": "1d"}]},
                "trainingPlans": [{**reserved, "tags": tags, "zone": zone}],
            }
        )
    )
    (run,) = run_scenario(load_scenario(scenario))["executions"]
    return run  # type: ignore[no-any-return]


def test_an_attempt_on_a_training_plan_runs_in_the_plans_zone(tmp_path: Path) -> None:
    """No spot in either zone: one move to us-east-1b (never back: no flapping), then the plan, whose
    capacity is in us-east-1a, at the last safe moment."""
    run = _on_a_plan(tmp_path, "us-east-1a")
    assert (run["status"], run["deadlineMet"]) == ("SUCCEEDED", True)
    assert run["capacityTiers"] == ["spot", "spot", "training-plan"]
    assert run["zones"] == ["us-east-1a", "us-east-1b", "us-east-1a"]


def test_a_plan_in_a_zone_the_stack_has_no_subnet_in_is_refused_naming_it(tmp_path: Path) -> None:
    run = _on_a_plan(tmp_path, "us-east-1c")
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert (
        "spec.capacity.trainingPlan: nlp-p4d-december's reserved capacity is in us-east-1c, and the stack's subnets "
        "(TrainingSubnetIds) are in us-east-1a, us-east-1b" in run["cause"]
    )


def test_jobs_of_one_type_in_one_zone_are_interrupted_together(tmp_path: Path) -> None:
    """Co-interruptions: spot capacity is the zone's, for every job of the type there (same-type,
    same-zone interruptions come within minutes of each other, arXiv 2604.16457): two 4-node jobs
    in us-east-1a lose their instances at the same moment, and both move to us-east-1b."""
    second = tmp_path / "llm-fsdp-b.yaml"
    second.write_text(
        MANIFEST.read_text().replace("name: llm-fsdp\n", "name: llm-fsdp-b\n").replace("llm-fsdp/", "llm-fsdp-b/")
    )
    scenario = tmp_path / "together.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "interrupted-together",
                "start": "2026-12-01T00:00:00Z",
                "submissions": [{"manifest": str(MANIFEST), "at": 0}, {"manifest": str(second), "at": "10m"}],
                "queue": {"capacity": {"ml.p4d.24xlarge": 8}},  # both jobs run at once
                "spot": {"startDelay": "5m"},
                "zones": {"us-east-1a": {"spot": {"startDelay": "5m", "capacityGaps": [{"from": "2h", "to": "1d"}]}}},
            }
        )
    )
    summary = run_scenario(load_scenario(scenario))
    runs = summary["executions"]
    assert [(r["status"], r["deadlineMet"]) for r in runs] == [("SUCCEEDED", True)] * 2
    assert [r["zones"] for r in runs] == [["us-east-1a", "us-east-1b"]] * 2
    firsts = [job.attempts[0] for job in summary["jobs"] if job.attempts and job.attempts[0].interrupted_at]
    assert len(firsts) == 2
    assert firsts[0].interrupted_at == firsts[1].interrupted_at, "one reclaim, both jobs"


def test_auto_never_falls_back_onto_a_plan_in_a_zone_without_a_stack_subnet(tmp_path: Path) -> None:
    """`trainingPlan: auto` takes only plans an attempt of many instances can run on in one zone."""
    run = _on_a_plan(tmp_path, "us-east-1c", named="auto")
    assert (run["status"], run["deadlineMet"]) == ("SUCCEEDED", True)
    assert "training-plan" not in run["capacityTiers"]
    assert run["capacityTiers"][-1] == "on-demand"


def test_a_gpu_failure_is_repaired_in_place_and_never_moves_the_job(tmp_path: Path) -> None:
    """A GPU of one node fails 70 minutes into training (SageMaker guide, "Cluster repairs for GPU errors"):
    SageMaker repairs the cluster and restarts from the last checkpoint on the same instances. Spotline
    reads "Repairing training cluster" as the job still holding its capacity: one attempt, one zone, no
    move, no on-demand; the repair is not billed, so the cost is four instances' billed time."""
    scenario = tmp_path / "repaired.yaml"
    scenario.write_text(
        json.dumps(
            {
                "name": "gpu-failure",
                "start": "2026-12-01T00:00:00Z",
                "manifests": [str(MANIFEST)],
                "spot": {"startDelay": "5m"},
                "training": {"hardwareFaults": ["1h10m"]},
            }
        )
    )
    summary = run_scenario(load_scenario(scenario))
    (run,) = summary["executions"]
    assert (run["status"], run["deadlineMet"], run["attempts"]) == ("SUCCEEDED", True, 1)
    assert (run["clusterRepairs"], run["spotInterruptions"], run["onDemandFallback"]) == (1, 0, False)
    assert len(run["zones"]) == 1
    (job,) = summary["jobs"]
    (attempt,) = job.attempts
    assert attempt.lost_work_seconds > 0  # the work since the last checkpoint, done again
    assert attempt.repaired_at and not attempt.interrupted_at
    # SageMaker bills Downloading, Training and Uploading: the repair's 10 minutes are not in it.
    assert attempt.training_seconds == pytest.approx(
        float(_spec().expected_duration_seconds or 0) + attempt.lost_work_seconds + 60 + 60, abs=2
    )
