"""Step Functions executions in the local stack as the world around them sees them: when each
started and ended on the virtual clock, the `Step Functions Execution Status Change` event AWS
puts on the default bus when one ends (moto emits none), and stops at a virtual moment, as
on-call would stop an execution in the console. StopExecution keeps its error and cause (moto's
models drop them), in the ExecutionAborted event and the status change event, as AWS does.

Step Functions' history quota holds locally as in AWS (moto has none): an execution whose 25,000th
event would not be ExecutionSucceeded fails there, with ExecutionFailed as that event
(`HISTORY_EVENT_LIMIT`).

The hooks (moto's `Execution.start`, its worker's `terminated`, `EventManager.add_event` and
`Environment.__init__`) are moto internals, hence the exact pin. Only the end of an execution is
emitted (SUCCEEDED, FAILED, TIMED_OUT, ABORTED), not RUNNING: the local stack delivers events when
asked (`deliver_events`), and nothing in Spotline reacts to an execution's start.
"""

from __future__ import annotations

import enum
import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

from botocore.utils import parse_timestamp
from moto.core.responses import ActionResult
from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, ExecutionStatus, HistoryEventType
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication, Execution
from moto.stepfunctions.parser.models import stepfunctions_parser_backends
from moto.stepfunctions.responses import StepFunctionResponse

from spotline_dev.harness.local.virtual_time import VirtualClock

STATUS_CHANGE = "Step Functions Execution Status Change"
STATES_SOURCE = "aws.states"
# Step Functions leaves the input out of the event when input and output together exceed 248 KB,
# and the output when it alone does (EventBridge's event size quota); inputDetails/outputDetails
# say whether each was included.
PAYLOAD_LIMIT = 248 * 1024
HISTORY_EVENT_LIMIT = 25_000
"""Step Functions developer guide, "Avoid reaching the history quota": "a hard quota of 25,000
entries in the execution event history. When an execution reaches 24,999 events, it waits for the
next event to happen. If the event number 25,000 is ExecutionSucceeded, the execution finishes
successfully. If the event number 25,000 isn't ExecutionSucceeded, the ExecutionFailed event is
logged and the state machine execution fails because of reaching the history limit"."""
HISTORY_LIMIT_FAILURE = ExecutionFailedEventDetails(
    # The error and cause AWS reports (the guide names neither): event 25,000, ExecutionFailed with
    # {"error": "States.Runtime", "cause": "The execution reached the maximum number of history
    # events (25000)."}, as executions that reached it show (loads/ardere#86, floci-io/floci#2734).
    error="States.Runtime",
    cause=f"The execution reached the maximum number of history events ({HISTORY_EVENT_LIMIT}).",
)
_history_lock = threading.Lock()  # the check and the event it lets through are one step


@dataclass
class ExecutionRecord:
    """One execution on the virtual clock."""

    arn: str
    name: str
    started_at: datetime
    ended_at: datetime | None = None
    status: str | None = None
    stopped_at: datetime | None = None  # when the local stack stopped it (StopExecution)
    stop_error: str | None = None  # StopExecution's error and cause (moto keeps neither)
    stop_cause: str | None = None
    event: dict[str, Any] | None = None  # the status change event put when it ended
    ended: threading.Event = field(default_factory=threading.Event, repr=False)


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def status_change_entry(execution: Any, record: ExecutionRecord) -> dict[str, Any]:
    """The PutEvents entry of an execution that ended, shaped as Step Functions sends it
    (source aws.states; detail with executionArn, stateMachineArn, name, status, startDate and
    stopDate in epoch milliseconds, input/output as JSON strings with their *Details, error, cause)."""
    assert record.ended_at is not None and record.status is not None
    raw_input = execution.execution_input if isinstance(execution.execution_input, str) else "{}"
    output = (
        json.dumps(execution.output, separators=(",", ":"))
        if record.status == "SUCCEEDED" and execution.output is not None
        else None
    )
    output_included = output is None or len(output.encode()) <= PAYLOAD_LIMIT
    input_included = len(raw_input.encode()) + (len(output.encode()) if output and output_included else 0) <= (
        PAYLOAD_LIMIT
    )
    detail = {
        "executionArn": record.arn,
        "stateMachineArn": execution.state_machine_arn,
        "name": record.name,
        "status": record.status,
        "startDate": _millis(record.started_at),
        "stopDate": _millis(record.ended_at),
        "input": raw_input if input_included else None,
        "output": output if output_included else None,
        "inputDetails": {"included": input_included},
        "outputDetails": {"included": output_included} if output is not None else None,
        "error": execution.error or record.stop_error or None,
        "cause": execution.cause or record.stop_cause or None,
    }
    return {
        "Source": STATES_SOURCE,
        "DetailType": STATUS_CHANGE,
        "Detail": json.dumps(detail),
        "Resources": [record.arn],
        "Time": record.ended_at,
    }


class Executions:
    """Every execution of the local stack, by ARN, with its virtual start and end.

    `put_event(entry)` puts a PutEvents entry on the default bus; `stop(arn, cause)` stops an
    execution (StopExecution)."""

    def __init__(
        self,
        clock: VirtualClock,
        put_event: Callable[[dict[str, Any]], None],
        stop: Callable[[str, str], None],
    ) -> None:
        self.clock, self._put_event, self._stop = clock, put_event, stop
        self.records: dict[str, ExecutionRecord] = {}
        self.stop_after: float | None = None
        self.on_end: Callable[[ExecutionRecord], None] | None = None  # told of each end, at its moment
        self._lock = threading.Lock()

    def install(self, exits: ExitStack) -> None:
        original_start = Execution.start
        original_terminated = BaseExecutionWorkerCommunication.terminated
        original_stop = StepFunctionResponse.stop_execution

        def start(execution: Execution) -> None:
            self._started(execution)
            original_start(execution)

        def terminated(communication: BaseExecutionWorkerCommunication) -> None:
            original_terminated(communication)
            execution: Any = communication.execution
            if getattr(execution.exec_worker.env.event_manager, "history_full", False):
                # What the state running when the limit came made of it must not replace the reason.
                execution.exec_status = ExecutionStatus.FAILED
                execution.error, execution.cause = HISTORY_LIMIT_FAILURE["error"], HISTORY_LIMIT_FAILURE["cause"]
            self._ended(communication.execution)

        def stop_execution(response: StepFunctionResponse) -> Any:
            """StopExecution with its error and cause, which moto's models drop (AWS keeps them
            in the ExecutionAborted event and the status change event)."""
            arn = response._get_param("executionArn")
            record = self.records.get(arn)
            if record is None or record.ended.is_set():
                return original_stop(response)  # not ours, or ended: moto answers (and errs) as it does
            record.stop_error, record.stop_cause = response._get_param("error"), response._get_param("cause")
            machine = response.stepfunction_backend._get_state_machine_for_execution(arn)
            execution = next(x for x in machine.executions if x.execution_arn == arn)
            execution.stop(stop_date=self.clock.now(), error=record.stop_error or "", cause=record.stop_cause or "")
            return ActionResult({"stopDate": self.clock.now()})

        exits.enter_context(mock.patch.object(StepFunctionResponse, "stop_execution", stop_execution))
        _install_history_limit(exits)
        exits.enter_context(mock.patch.object(Execution, "start", start))
        exits.enter_context(mock.patch.object(BaseExecutionWorkerCommunication, "terminated", terminated))

    # --- hooks ------------------------------------------------------------------------------

    def _started(self, execution: Any) -> None:
        record = ExecutionRecord(execution.exec_arn, execution.name, self.clock.now())
        execution.start_date = record.started_at  # DescribeExecution and ListExecutions tell virtual time
        with self._lock:
            self.records[record.arn] = record
        self.clock.join(record.arn)  # time now waits for it (virtual_time.VirtualClock)
        if self.stop_after is not None:
            offset = self.stop_after
            cause = f"stopped {timedelta(seconds=offset)} after its start, as on-call would in the console"
            self.clock.at(record.started_at + timedelta(seconds=offset), lambda: self._stop_if_running(record, cause))

    def _stop_if_running(self, record: ExecutionRecord, cause: str) -> None:
        if record.ended.is_set() or record.stopped_at is not None:
            return
        record.stopped_at = self.clock.now()
        self._stop(record.arn, cause)

    def _ended(self, execution: Any) -> None:
        with self._lock:
            record = self.records.get(execution.exec_arn)
            if record is None:  # started before the hooks (not in the local stack): start unknown
                record = ExecutionRecord(execution.exec_arn, execution.name, self.clock.now())
                self.records[record.arn] = record
        try:
            record.status = str(execution.exec_status.value)
            aborted_by_us = record.status == "ABORTED" and record.stopped_at is not None
            record.ended_at = record.stopped_at if aborted_by_us else self.clock.now()
            execution.stop_date = record.ended_at
            if self.clock.closed:
                # The stack is gone (a test that did not wait for its execution, which then failed
                # on the mocks' absence): its status change must not land on the next stack's bus.
                return
            record.event = status_change_entry(execution, record)
            self._put_event(record.event)
            if self.on_end is not None:
                self.on_end(record)
        finally:
            self.clock.leave(record.arn)
            record.ended.set()


def _install_history_limit(exits: ExitStack) -> None:
    """Fail an execution at its 25,000th event (`HISTORY_EVENT_LIMIT`): a count moto keeps anyway
    (the next event id), looked at once per event. ExecutionSucceeded or ExecutionFailed as that
    event ends it as it would; any other event is replaced by ExecutionFailed (States.Runtime),
    the execution is failed (its waits end), and what it still does records nothing."""
    original_init = Environment.__init__
    original_add_event = EventManager.add_event

    def init(env: Environment, *args: Any, **kwargs: Any) -> None:
        original_init(env, *args, **kwargs)
        env.event_manager.owner = env  # type: ignore[attr-defined]  # frames take their root's manager

    def add_event(manager: EventManager, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        with _history_lock:
            if getattr(manager, "history_full", False):
                return HISTORY_EVENT_LIMIT
            ends = event_type in (HistoryEventType.ExecutionSucceeded, HistoryEventType.ExecutionFailed)
            if manager._event_id_gen._next_id < HISTORY_EVENT_LIMIT or ends:
                return int(original_add_event(manager, context, event_type, *args, **kwargs))
            manager.history_full = True  # type: ignore[attr-defined]
            original_add_event(
                manager,
                context,
                HistoryEventType.ExecutionFailed,
                EventDetails(executionFailedEventDetails=HISTORY_LIMIT_FAILURE),  # type: ignore[typeddict-item]
            )
        owner = getattr(manager, "owner", None)
        if owner is not None:
            owner.set_error(HISTORY_LIMIT_FAILURE)
        return HISTORY_EVENT_LIMIT

    exits.enter_context(mock.patch.object(Environment, "__init__", init))
    exits.enter_context(mock.patch.object(EventManager, "add_event", add_event))


def history_of(execution_arn: str) -> list[dict[str, Any]]:
    """GetExecutionHistory's events, read from moto's execution in-process: what boto3 returns for
    it (enums as their names, timestamps parsed as botocore parses them), without serializing
    hundreds of events to JSON and parsing them back (tests/devtools/harness/local/test_history.py holds
    the two equal)."""
    region, account = execution_arn.split(":")[3:5]
    execution: Any = stepfunctions_parser_backends[account][region].describe_execution(execution_arn=execution_arn)
    return [
        {**_plain(event), "timestamp": parse_timestamp(event["timestamp"])}
        for event in execution.to_history_output()["events"]
    ]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value.value if isinstance(value, enum.Enum) else value
