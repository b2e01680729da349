"""Helpers for the quota share tests: a quota management queue on the rig, payloads of their own,
and the raw bodies of the quota share operations (for checking them against botocore's model)."""

from __future__ import annotations

import json
from typing import Any

import botocore.session

from devtools.harness.standin.fixture_rig import Rig, RigFactory, assert_matches_shape, training_payload
from spotline_dev.harness.standin import TrainingBehaviour

HOUR = 3600.0
G5 = "ml.g5.2xlarge"  # the payloads' instance type: the capacity unit of the quota shares here
QUEUE = "spotline-training"
POLICY = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/team-quotas"
CROSS_SHARE = "Cross-share preemption triggered to reclaim borrowed capacity"
IN_SHARE = "In-share preemption triggered by a higher priority job"
IN_PROGRESS = "PREEMPTION_IN_PROGRESS: "
SHARE_OPERATIONS = (
    "CreateQuotaShare",
    "DescribeQuotaShare",
    "ListQuotaShares",
    "UpdateQuotaShare",
    "DeleteQuotaShare",
)
# With the default weather: submitted at s, a job's attempt starts at s + 30 and trains from s + 330.
START = 30.0
TRAINING = 330.0
STOPPING = 30.0  # a stopped training job takes this long to stop


def payload(name: str, instances: int = 1, instance_type: str = "ml.g5.2xlarge") -> dict[str, Any]:
    """A job of its own: its own checkpoint prefix (a shared one would resume another's progress)."""
    request = training_payload(name, checkpoint=f"s3://checkpoints/{name}/")
    request["ResourceConfig"]["InstanceCount"] = instances
    request["ResourceConfig"]["InstanceType"] = instance_type
    return request


def quota_rig(make_rig: RigFactory, capacity: int | dict[str, int] | None = 2, duration: float = HOUR) -> Rig:
    """The rig's queue with a (quota management) scheduling policy and a service environment of
    `capacity` instances of ml.g5.2xlarge (or {instance type: instances})."""
    limits = {G5: capacity} if isinstance(capacity, int) else capacity
    return make_rig(behaviour=TrainingBehaviour(duration=duration), capacity=limits, scheduling_policy_arn=POLICY)


def submit(rig: Rig, name: str, share: str, instances: int = 1, **extra: Any) -> str:
    return rig.submit(payload(name, instances), name=name, quotaShareName=share, **extra)


def training_names(rig: Rig, job_id: str) -> list[str]:
    return [a["serviceResourceId"]["value"].rsplit("/", 1)[1] for a in rig.batch_job(job_id)["attempts"]]


def capture_share_bodies(rig: Rig) -> list[tuple[str, dict[str, Any]]]:
    """Raw response bodies of the quota share operations from now on (the rig's client's hooks)."""
    bodies: list[tuple[str, dict[str, Any]]] = []

    def capture(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
        if operation_model.name in SHARE_OPERATIONS and response_dict["status_code"] == 200:
            bodies.append((operation_model.name, json.loads(response_dict["body"] or b"{}")))

    rig.batch.meta.events.register("before-parse", capture)
    return bodies


def check_bodies(bodies: list[tuple[str, dict[str, Any]]]) -> None:
    model = botocore.session.get_session().get_service_model("batch")
    assert bodies
    for operation, body in bodies:
        assert_matches_shape(body, model.operation_model(operation).output_shape, operation)
