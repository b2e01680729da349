"""The training queue's jobStateTimeLimitActions: no job blocks the head of the queue (and its quota
share) for ever, whatever Batch holds it RUNNABLE for. AWS Batch user guide, "Automatic remediation
with jobStateTimeLimitActions": the reasons that support it are CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY,
MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE and MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED
(the stand-in's TIME_LIMIT_REASONS); for a SAGEMAKER_TRAINING queue the only action is TERMINATE, after
600 to 86,400 seconds (botocore's batch model, JobStateTimeLimitAction)."""

from __future__ import annotations

from spotline_dev.harness.local.template import load_template
from spotline_dev.harness.standin.batch.queues import TIME_LIMIT_REASONS

TEMPLATE = load_template()
QUEUE = TEMPLATE["Resources"]["TrainingJobQueue"]["Properties"]


def test_every_reason_that_can_block_the_queue_has_a_terminate_after_a_bounded_time() -> None:
    assert QUEUE["JobQueueType"] == "SAGEMAKER_TRAINING"
    actions = {action["Reason"]: action for action in QUEUE["JobStateTimeLimitActions"]}
    assert set(actions) == set(TIME_LIMIT_REASONS)
    for reason, action in actions.items():
        assert (action["Action"], action["State"]) == ("TERMINATE", "RUNNABLE"), reason
        parameter = TEMPLATE["Parameters"][action["MaxTimeSeconds"]["Ref"]]
        assert parameter["Type"] == "Number"
        assert 600 <= parameter["MinValue"] <= parameter["Default"] <= parameter["MaxValue"] <= 86_400, reason


def test_a_misconfigured_job_is_given_less_time_than_one_waiting_for_capacity() -> None:
    """Waiting helps a job short of capacity; one asking for more than its limits waits only for
    someone to raise them (spotline teams apply), then blocks its share no longer than that."""
    limits = {
        a["Reason"]: TEMPLATE["Parameters"][a["MaxTimeSeconds"]["Ref"]] for a in QUEUE["JobStateTimeLimitActions"]
    }
    capacity = limits.pop("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert limits and all(p["Default"] < capacity["Default"] for p in limits.values())
