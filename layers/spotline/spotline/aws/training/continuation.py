"""Handing a run's watch over to a fresh execution, before this one comes near Step Functions'
history limit (25,000 events per execution).

In order, each step safe to repeat (the state machine retries the task):
1. start the next execution, named `<first>-c<n>`, with the run's state (`$.continuedFrom`
   names this execution)
   (the same name and input again is the same execution; a repeat after the state moved on
   finds it by name);
2. tag the live service job and its training job `spotline:execution=<next>`: the tag is the
   one record of who watches a job, which the end-of-execution clean-up, the reconciler and
   CheckNoLiveJob read;
3. point the watch table's item of this execution at the next, for SageMaker events of a
   training job Batch creates later from the payload (its tags name the first execution).
This execution then ends in `ContinuedInNewExecution`; its end stops nothing, since no job is
tagged with it any more.
"""

from __future__ import annotations

import json
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.aws.common.observability import logger
from spotline.aws.training.training_watch import watches_from_environment
from spotline.core.regions.regions import region_of_arn
from spotline.core.state import ContinuedAs, ContinuedFrom, RunStatus, Training
from spotline.core.state.execution_state import continuation_input, continuation_name
from spotline.core.training.service_jobs import EXECUTION_TAG, execution_arn, execution_name_of, state_machine_of


def continue_in_new_execution(state: dict[str, Any], *, execution_arn: str) -> ContinuedAs:
    current = execution_name_of(execution_arn)
    carried = continuation_input(state, execution=current)
    after = ContinuedFrom.of_state(carried)
    name = continuation_name(after.first, after.number)
    machine = state_machine_of(execution_arn)
    started = _start(machine, name, carried)
    retagged = _retag(state, name)
    watches_from_environment().continue_as(current, name)
    logger.info("Watch handed over", extra={"next": name, "retagged": retagged})
    return ContinuedAs(execution_name=name, execution_arn=started, retagged=retagged)


def _start(machine: str, name: str, carried: dict[str, Any]) -> str:
    sfn = client("stepfunctions")
    try:
        return str(sfn.start_execution(stateMachineArn=machine, name=name, input=json.dumps(carried))["executionArn"])
    except Exception as exc:
        if error_code(exc) != "ExecutionAlreadyExists":
            raise
    # Started by an earlier try of this task (whose state has moved on since): the same run.
    return str(sfn.describe_execution(executionArn=execution_arn(machine, name))["executionArn"])


def _retag(state: dict[str, Any], name: str) -> list[str]:
    training, status = Training.in_state(state), RunStatus.in_state(state)
    service_job_arn = (training.job_arn if training else None) or ""
    tagged = []
    # Each job is tagged in its own region (an attempt placed in a peer region lives there).
    if service_job_arn:
        arn = service_job_arn
        client("batch", region_of_arn(arn) or None).tag_resource(resourceArn=arn, tags={EXECUTION_TAG: name})
        tagged.append(arn)
    job_arn = _training_job_arn(service_job_arn, status.training_job_name if status else None)
    if job_arn:
        client("sagemaker", region_of_arn(job_arn) or None).add_tags(
            ResourceArn=job_arn, Tags=[{"Key": EXECUTION_TAG, "Value": name}]
        )
        tagged.append(job_arn)
    return tagged


def _training_job_arn(service_job_arn: str, training_job_name: Any) -> str | None:
    """The training job's ARN, in the service job's partition, region and account."""
    parts = service_job_arn.split(":")
    if not training_job_name or len(parts) < 6:
        return None
    partition, region, account = parts[1], parts[3], parts[4]
    return f"arn:{partition}:sagemaker:{region}:{account}:training-job/{str(training_job_name).lower()}"
