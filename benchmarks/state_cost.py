"""Where a replay's wall time goes: milliseconds per state transition and per Lambda invocation,
broken down by who spends them.

    .venv/bin/python benchmarks/state_cost.py [SCENARIO]   (default: the sandbox's scenario)

Each section's time is its own (exclusive): a handler's time leaves out the AWS calls it makes,
and the interpreter's call of a Lambda leaves out the handler. What no section claims inside the
run is the Step Functions interpreter's own work (moto evaluating the real .asl.json) and the
clock's hand-offs. The executions take turns on the virtual clock, so their threads' times add up
to the wall time of the run. Timing adds a little of its own; the figures are for comparing runs.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import botocore.client

from spotline_dev.harness.local import lambdas as local_lambdas
from spotline_dev.harness.local import stack as local_aws
from spotline_dev.harness.sandbox import replay as sandbox
from spotline_dev.harness.sandbox import runs as sandbox_runs
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario


class SectionClock:
    """Exclusive wall time per section label, on every thread (sections nest per thread)."""

    def __init__(self) -> None:
        self.own: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def section(self, label: str) -> Iterator[None]:
        stack: list[list[Any]] = self._local.__dict__.setdefault("stack", [])
        frame = [label, time.perf_counter(), 0.0]
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            elapsed = time.perf_counter() - frame[1]
            if stack:
                stack[-1][2] += elapsed
            with self._lock:
                self.own[label] += elapsed - frame[2]
                self.calls[label] += 1

    def inside(self, prefix: str) -> bool:
        return any(frame[0].startswith(prefix) for frame in self._local.__dict__.get("stack", []))

    def wrap(self, owner: Any, name: str, label: Callable[..., str]) -> Any:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.section(label(*args, **kwargs)):
                return original(*args, **kwargs)

        return mock.patch.object(owner, name, timed)


def measure(path: Path | None) -> tuple[float, SectionClock, dict[str, Any]]:
    clock = SectionClock()

    def aws_label(client: Any, operation: str, _params: Any) -> str:
        service = client.meta.service_model.service_name
        if clock.inside("handler"):
            return f"aws call by a handler: {service}"
        if service == "lambda" and operation == "Invoke":
            return "interpreter's Lambda call (serialize, moto's Lambda)"
        return f"aws call by the interpreter or the sandbox: {service} {operation}"

    patches = [
        clock.wrap(local_lambdas.InProcessLambdas, "invoke", lambda _self, function, *_: "handler"),
        clock.wrap(botocore.client.BaseClient, "_make_api_call", aws_label),
        clock.wrap(local_aws, "create_resources", lambda *_a, **_k: "stack set-up (template resources)"),
        clock.wrap(local_aws.LocalStack, "history", lambda *_a, **_k: "history read (GetExecutionHistory)"),
        clock.wrap(sandbox, "follow_run", lambda *_a, **_k: "run"),
        clock.wrap(sandbox_runs, "summarize", lambda *_a, **_k: "summary and story"),
    ]
    for patch in patches:
        patch.start()
    try:
        started = time.perf_counter()
        summary = run_scenario(load_scenario(path))
        wall = time.perf_counter() - started
    finally:
        for patch in patches:
            patch.stop()
    return wall, clock, summary


def main(path: Path | None) -> None:
    wall, clock, summary = measure(path)
    executions = summary["executions"]
    transitions = sum(sum(1 for e in run["history"] if e["type"].endswith("StateEntered")) for run in executions)
    events = sum(len(run["history"]) for run in executions)
    invocations = clock.calls["handler"]
    print(f"scenario {summary['scenario']}: {len(executions)} execution(s), replayed in {wall:.2f} s of wall time")
    print(f"  {transitions} state transitions, {events} history events, {invocations} Lambda invocations")
    print(f"  {1000 * wall / max(transitions, 1):.1f} ms per state transition (whole replay)")
    per_invocation = 1000 * (clock.own["handler"] + _aws(clock, "handler")) / max(invocations, 1)
    print(f"  {per_invocation:.1f} ms per Lambda invocation (handler and its AWS calls)")
    print("where the time goes (exclusive seconds, calls):")
    claimed = 0.0
    for label, seconds in sorted(clock.own.items(), key=lambda item: -item[1]):
        if label == "run":
            continue
        claimed += seconds
        print(f"  {seconds:7.2f} s  {clock.calls[label]:5d}  {label}")
    print(f"  {max(wall - claimed, 0.0):7.2f} s         interpreter (moto's ASL evaluation), clock hand-offs, rest")


def _aws(clock: SectionClock, who: str) -> float:
    return sum(v for k, v in clock.own.items() if k.startswith(f"aws call by a {who}"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
