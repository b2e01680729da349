"""Faults injected into the local stack's functions: unexpected errors on chosen invocations,
as real code raises them (a bug, an unhandled botocore error), for the workflow to survive."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime


class InjectedFault(RuntimeError):
    """An unexpected error injected into a function (`LocalStack.inject_fault`, a scenario's
    `faults:`). It is raised where the handler would run, so Lambda reports an unhandled
    exception (errorType InjectedFault) and Step Functions a TaskFailed with that error."""


@dataclass
class Fault:
    """`count` invocations of a function from `start` on raise InjectedFault."""

    logical_id: str
    start: datetime
    count: int
    raised: int = 0
    raised_at: list[datetime] = field(default_factory=list)  # virtual time of each one raised


class Faults:
    """The faults of each function (by function name), on the stack's clock."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.by_function: dict[str, list[Fault]] = {}

    def add(self, function_name: str, fault: Fault) -> Fault:
        self.by_function.setdefault(function_name, []).append(fault)
        return fault

    def due(self, function_name: str) -> InjectedFault | None:
        """The error this invocation raises, if a fault of the function is due now."""
        now = self.clock()
        for fault in self.by_function.get(function_name, []):
            if fault.start <= now and fault.raised < fault.count:
                fault.raised += 1
                fault.raised_at.append(now)
                start = fault.start.isoformat().replace("+00:00", "Z")
                return InjectedFault(
                    f"{fault.logical_id} failed unexpectedly (injected fault {fault.raised} of {fault.count}, "
                    f"from {start})"
                )
        return None
