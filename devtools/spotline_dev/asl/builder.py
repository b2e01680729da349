"""A small builder for Amazon States Language, after Metaflow's `State`/`Workflow`
(plugins/aws/step_functions/step_functions.py): each state is a value that knows its own ASL,
and a `Workflow` checks the graph before it writes it (every name once, every target there,
every state reachable), as Step Functions would refuse it on deploy.

Each state writes its fields in one fixed order, so the committed `.asl.json` is the same text
every time it is built."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
LAMBDA_INVOKE_WAIT_FOR_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken"
SNS_PUBLISH = "arn:aws:states:::sns:publish"


@dataclass(frozen=True)
class Retrier:
    """One entry of a Task's Retry. `None` leaves the field out (Step Functions' default)."""

    errors: tuple[str, ...]
    attempts: int
    interval: int | None = None
    backoff: float | None = None
    max_delay: int | None = None
    full_jitter: bool = False

    def to_asl(self) -> Json:
        asl: Json = {"ErrorEquals": list(self.errors)}
        if self.interval is not None:
            asl["IntervalSeconds"] = self.interval
        if self.backoff is not None:
            asl["BackoffRate"] = self.backoff
        asl["MaxAttempts"] = self.attempts
        if self.max_delay is not None:
            asl["MaxDelaySeconds"] = self.max_delay
        if self.full_jitter:
            asl["JitterStrategy"] = "FULL"
        return asl


@dataclass(frozen=True)
class Catcher:
    """One entry of a Task's Catch: these errors go to `next`, the error kept at `result_path`."""

    errors: tuple[str, ...]
    result_path: str
    next: str

    def to_asl(self) -> Json:
        return {"ErrorEquals": list(self.errors), "ResultPath": self.result_path, "Next": self.next}


@dataclass(frozen=True)
class State(ABC):
    name: str
    comment: str | None = field(default=None, kw_only=True)

    @abstractmethod
    def to_asl(self) -> Json:
        """The state's ASL, its fields in one fixed order."""

    def targets(self) -> tuple[str, ...]:
        """The states this one may go to next."""
        return ()

    def _head(self, kind: str) -> Json:
        asl: Json = {"Type": kind}
        if self.comment is not None:
            asl["Comment"] = self.comment
        return asl


@dataclass(frozen=True)
class Task(State):
    """A Task. `result_path=None` discards the result (ASL's `"ResultPath": null`)."""

    resource: str = field(kw_only=True)
    parameters: Json = field(kw_only=True)
    result_path: str | None = field(kw_only=True)
    next: str = field(kw_only=True)
    result_selector: Mapping[str, str] | None = field(default=None, kw_only=True)
    timeout_seconds_path: str | None = field(default=None, kw_only=True)
    retry: Sequence[Retrier] = field(default=(), kw_only=True)
    catch: Sequence[Catcher] = field(default=(), kw_only=True)

    def to_asl(self) -> Json:
        asl = self._head("Task")
        asl["Resource"] = self.resource
        asl["Parameters"] = self.parameters
        if self.timeout_seconds_path is not None:
            asl["TimeoutSecondsPath"] = self.timeout_seconds_path
        if self.result_selector is not None:
            asl["ResultSelector"] = dict(self.result_selector)
        asl["ResultPath"] = self.result_path
        if self.retry:
            asl["Retry"] = [retrier.to_asl() for retrier in self.retry]
        if self.catch:
            asl["Catch"] = [catcher.to_asl() for catcher in self.catch]
        asl["Next"] = self.next
        return asl

    def targets(self) -> tuple[str, ...]:
        return (self.next, *(catcher.next for catcher in self.catch))


def result_selector(keys: Iterable[str]) -> dict[str, str]:
    """The ResultSelector keeping these keys of a Lambda's answer (its `Payload`), in this order."""
    return {f"{key}.$": f"$.Payload.{key}" for key in keys}


def lambda_payload(*, wait_for_token: bool = False) -> Json:
    """What every Spotline Lambda receives: the execution's id and its whole state (and the task
    token when the step waits for one)."""
    payload: Json = {"execution.$": "$$.Execution.Id"}
    if wait_for_token:
        payload["taskToken.$"] = "$$.Task.Token"
    payload["input.$"] = "$"
    return payload


def lambda_task(
    name: str,
    *,
    function: str,
    comment: str,
    result_path: str,
    next: str,
    retry: Sequence[Retrier],
    catch: Sequence[Catcher],
    keeps: Sequence[str] | None = None,
    wait_for_token: bool = False,
    timeout_seconds_path: str | None = None,
    payload: Json | None = None,
) -> Task:
    """A Task invoking the template's `<function>Function` (its ARN a DefinitionSubstitution).
    `keeps`: the keys of the answer its section keeps (a ResultSelector); None keeps it whole."""
    return Task(
        name,
        comment=comment,
        resource=LAMBDA_INVOKE_WAIT_FOR_TOKEN if wait_for_token else LAMBDA_INVOKE,
        parameters={
            "FunctionName": f"${{{function}FunctionArn}}",
            "Payload": payload if payload is not None else lambda_payload(wait_for_token=wait_for_token),
        },
        timeout_seconds_path=timeout_seconds_path,
        result_selector=None if keeps is None else result_selector(keeps),
        result_path=result_path,
        retry=retry,
        catch=catch,
        next=next,
    )


def when(variable: str, *, next: str | None = None, **test: Any) -> Json:
    """A Choice rule, `when("$.manifest.valid", BooleanEquals=True, next="...")`, or without
    `next` a condition inside `all_of`."""
    rule: Json = {"Variable": variable, **test}
    if next is not None:
        rule["Next"] = next
    return rule


def all_of(*conditions: Json, next: str) -> Json:
    return {"And": list(conditions), "Next": next}


@dataclass(frozen=True)
class Choice(State):
    choices: Sequence[Json] = field(kw_only=True)
    default: str = field(kw_only=True)

    def to_asl(self) -> Json:
        asl = self._head("Choice")
        asl["Choices"] = list(self.choices)
        asl["Default"] = self.default
        return asl

    def targets(self) -> tuple[str, ...]:
        return (*(rule["Next"] for rule in self.choices), self.default)


@dataclass(frozen=True)
class Pass(State):
    next: str = field(kw_only=True)
    parameters: Json | None = field(default=None, kw_only=True)
    result_path: str | None = field(default=None, kw_only=True)

    def to_asl(self) -> Json:
        asl = self._head("Pass")
        if self.parameters is not None:
            asl["Parameters"] = self.parameters
        if self.result_path is not None:
            asl["ResultPath"] = self.result_path
        asl["Next"] = self.next
        return asl

    def targets(self) -> tuple[str, ...]:
        return (self.next,)


@dataclass(frozen=True)
class Wait(State):
    """A Wait for `$.<seconds_path>` seconds or until the timestamp at `timestamp_path`."""

    next: str = field(kw_only=True)
    seconds_path: str | None = field(default=None, kw_only=True)
    timestamp_path: str | None = field(default=None, kw_only=True)

    def to_asl(self) -> Json:
        if (self.seconds_path is None) == (self.timestamp_path is None):
            raise ValueError(f"{self.name}: a Wait needs exactly one of seconds_path and timestamp_path")
        asl = self._head("Wait")
        if self.seconds_path is not None:
            asl["SecondsPath"] = self.seconds_path
        else:
            asl["TimestampPath"] = self.timestamp_path
        asl["Next"] = self.next
        return asl

    def targets(self) -> tuple[str, ...]:
        return (self.next,)


@dataclass(frozen=True)
class Fail(State):
    """A Fail named `error`, its cause a fixed text or read from the state at `cause_path`."""

    error: str = field(kw_only=True)
    cause: str | None = field(default=None, kw_only=True)
    cause_path: str | None = field(default=None, kw_only=True)

    def to_asl(self) -> Json:
        asl = self._head("Fail")
        asl["Error"] = self.error
        if self.cause is not None:
            asl["Cause"] = self.cause
        if self.cause_path is not None:
            asl["CausePath"] = self.cause_path
        return asl


@dataclass(frozen=True)
class Succeed(State):
    def to_asl(self) -> Json:
        return self._head("Succeed")


@dataclass(frozen=True)
class Workflow:
    """A state machine: its states in the order the file lists them."""

    comment: str
    start_at: str
    states: Sequence[State]

    def to_asl(self) -> Json:
        by_name: dict[str, State] = {}
        for state in self.states:
            if state.name in by_name:
                raise ValueError(f"two states are named {state.name}")
            by_name[state.name] = state
        for state in self.states:
            missing = [target for target in state.targets() if target not in by_name]
            if missing:
                raise ValueError(f"{state.name} goes to {', '.join(missing)}: no such state")
        reached = _reachable(self.start_at, by_name)
        unreached = [name for name in by_name if name not in reached]
        if unreached:
            raise ValueError(f"no state leads to {', '.join(unreached)}")
        return {
            "Comment": self.comment,
            "StartAt": self.start_at,
            "States": {state.name: state.to_asl() for state in self.states},
        }

    def to_text(self) -> str:
        """The file's text: two-space JSON, one newline at the end."""
        return json.dumps(self.to_asl(), indent=2) + "\n"


def _reachable(start: str, by_name: Mapping[str, State]) -> set[str]:
    if start not in by_name:
        raise ValueError(f"StartAt {start}: no such state")
    seen = {start}
    todo = [start]
    while todo:
        for target in by_name[todo.pop()].targets():
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
