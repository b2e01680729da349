"""The fault matrix's shared parts (issue 45): which task of which state machine each scenario puts
faults into, the faults themselves, and what every case checks at its end. The matrix files
(tests/statemachines/test_fault_matrix*.py) take their cases from `MATRIX`, which
test_fault_matrix.py holds to the Lambda tasks the state machine files define."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger_checks import assert_reconciled

from builders import EXAMPLE_MANIFEST
from spotline_dev.harness.local.handles import LocalStack

ROOT = Path(__file__).parents[2]
MACHINES = ("training_lifecycle", "scoring_run")

# How each one-off fault shows in the history: an error the handler raises, a function timeout after
# its work was done, Lambda refusing one invocation, and ten throttled AWS answers in a row (botocore
# absorbs 5 retries, the 6th answer is a TransientAwsError, the task's retry absorbs the other 4).
FAULTS = {
    "error": "InjectedFault",
    "timeout": "Sandbox.Timedout",
    "throttle": "Lambda.TooManyRequestsException",
    "burst": "TransientAwsError",
}

# Each scenario's tasks, as (state, the n-th invocation of its function in the scenario's fault-free
# run, from 0; -1 the last). A task a scenario passes more than once is listed at the invocations
# that do different work (SubmitTrainingJob's spot and on-demand submissions).
FALLBACK_TASKS = (  # test_fault_matrix.py: a run with an on-demand fallback
    ("LoadManifest", 0),
    ("CheckDatasets", 0),
    ("ValidateResources", 0),
    ("CheckNoLiveJob", 0),
    ("SubmitTrainingJob", 0),
    ("CheckTrainingStatus", 0),
    ("WaitForTrainingEvent", 0),
    ("StopSpotJob", 0),
    ("SubmitTrainingJob", 1),
    ("RecordOutcome", 0),
)
DATASET_WAIT_TASKS = (("WaitForDatasets", 0),)  # test_fault_matrix_training.py: a run that waits for its dataset
CONTINUATION_TASKS = (("ContinueInNewExecution", 0),)  # ... a run that continues in a new execution
NO_CAPACITY_TASKS = (("StopJobWithoutCapacity", 0),)  # ... no capacity of any kind by the deadline
AFTER_ERROR_TASKS = (("StopTrainingJobAfterError", 0),)  # ... CheckTrainingStatus failing past its retries
SCORING_TASKS = (  # test_fault_matrix_scoring.py: a scoring run
    ("PlanScoringRun", 0),
    ("AdvanceScoringRun", 0),  # the look that starts the shards
    ("AdvanceScoringRun", -1),  # the look that finds every shard scored
    ("RecordScoringRun", 0),
)
SCORING_FAILURE_TASKS = (("StopTheRunsTransformJobs", 0),)  # ... AdvanceScoringRun failing past its retries
MATRIX = {
    "training_lifecycle": (
        FALLBACK_TASKS + DATASET_WAIT_TASKS + CONTINUATION_TASKS + NO_CAPACITY_TASKS + AFTER_ERROR_TASKS
    ),
    "scoring_run": SCORING_TASKS + SCORING_FAILURE_TASKS,
}


def states_of(machine: str) -> dict[str, Any]:
    return json.loads((ROOT / "statemachines" / f"{machine}.asl.json").read_text())["States"]  # type: ignore[no-any-return]


def lambda_tasks(machine: str) -> dict[str, dict[str, Any]]:
    """The state machine file's Lambda tasks (request-response and callback), by state name."""
    return {
        name: state
        for name, state in states_of(machine).items()
        if str(state.get("Resource", "")).startswith("arn:aws:states:::lambda:invoke")
    }


def function_of(machine: str, state: str) -> str:
    """The logical id of the function the task invokes (its FunctionName substitution)."""
    return str(lambda_tasks(machine)[state]["Parameters"]["FunctionName"]).removeprefix("${").removesuffix("Arn}")


def case_ids(tasks: tuple[tuple[str, int], ...]) -> list[str]:
    return [f"{state}#{nth}" for state, nth in tasks]


def invocation_times(stack: LocalStack) -> dict[str, list[datetime]]:
    """When each function (logical id) was invoked, in order (virtual time: deterministic)."""
    times: dict[str, list[datetime]] = {}
    for invocation in stack.invocations:
        assert invocation.at is not None
        times.setdefault(stack.logical_id(invocation.function), []).append(invocation.at)
    return times


def inject(stack: LocalStack, function: str, fault: str, start: datetime, count: int = 1) -> None:
    """`count` faults of kind `fault` (FAULTS) into the function from `start`; a burst is ten
    throttled AWS answers per fault."""
    if fault == "burst":
        stack.throttle_calls(function, 10 * count, start=start)
    else:
        stack.inject_fault(function, count=count, start=start, kind=fault)


def task_failures(history: list[dict[str, Any]]) -> list[str]:
    return [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]


def live_jobs(stack: LocalStack) -> list[str]:
    """The training service jobs still queued or running once SageMaker had time to stop them."""
    stack.clock.advance(600)  # time for SageMaker to stop what was terminated
    return [j.job_name for j in stack.standin.jobs if j.status not in ("SUCCEEDED", "FAILED")]


def outcome_report(stack: LocalStack, key: str = "reports/manifests/search-ranking/ranker-v2.yaml.outcome.json") -> Any:
    return json.loads(stack.client("s3").get_object(Bucket=stack.bucket, Key=key)["Body"].read())


def reconcile(stack: LocalStack, name: str, figures: dict[str, Any], manifest: Path = EXAMPLE_MANIFEST) -> None:
    """The reported figures are the stand-in's ledger's (tests/ledger_checks.py) for run `name`
    (the first execution's: the one that submitted its jobs) of `manifest` (its types: the baseline's)."""
    assert_reconciled(
        {
            "name": name,
            "manifest": str(manifest),
            "ledger": stack.standin.ledger().get(name),
            "billableSeconds": figures.get("billable_seconds", 0),
            "trainingSeconds": figures.get("training_seconds", 0),
            "trainingPlanSeconds": figures.get("training_plan_seconds", 0),
            "costUsd": figures.get("cost_usd"),
            "lostWorkSeconds": figures.get("lost_work_seconds"),
            "onDemandSeconds": figures.get("on_demand_seconds"),
            "onDemandCostUsd": figures.get("on_demand_cost_usd"),
            "savingsPercent": figures.get("savings_percent"),
            "billingSettled": figures.get("billing_settled", False),
        }
    )
