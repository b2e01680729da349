"""Benchmark (not a test): what the permission check of the local stack checks, and what it costs.
Each example scenario below is replayed twice, with the check (every call a function makes judged
against its role in the expanded template) and without it; printed per scenario: the functions
whose calls were checked, the distinct calls (function, operation, region), the calls checked,
the decisions evaluated (the rest came from the check's cache), the denials, and both wall times.

Run: .venv/bin/python benchmarks/permission_check.py
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any
from unittest import mock

from spotline_dev.harness.local import stack as local_stack
from spotline_dev.harness.local.permissions.checker import PermissionCheck
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.sandbox.runs import QUIET, powertools_environment_for

SCENARIOS = ("default", "spot-in-another-region", "trains-from-efs", "falls-back-onto-a-plan", "scores-a-night")


def _replay(name: str, *, checked: bool) -> tuple[float, list[PermissionCheck], int]:
    made: list[PermissionCheck] = []
    install = local_stack.install_permission_check
    counted = {"calls": 0}
    on_call = PermissionCheck.on_call

    def counting(self: PermissionCheck, *args: Any, **kwargs: Any) -> None:
        counted["calls"] += 1
        on_call(self, *args, **kwargs)

    def keep(*args: Any, **kwargs: Any) -> PermissionCheck:
        check = install(*args, **kwargs)
        made.append(check)
        return check

    patches = [mock.patch.object(local_stack, "install_permission_check", keep)]
    patches.append(mock.patch.object(PermissionCheck, "on_call", counting))
    if not checked:
        patches.append(mock.patch.object(PermissionCheck, "watch", lambda self, client: client))
    scenario = load_scenario(PROJECT_ROOT / "examples" / "scenarios" / f"{name}.yaml")
    with ExitStack() as stack:
        stack.enter_context(powertools_environment_for(QUIET))
        for patch in patches:
            stack.enter_context(patch)
        started = time.perf_counter()
        run_scenario(scenario)
        return time.perf_counter() - started, made, counted["calls"]


def main() -> None:
    print("The permission check on example scenarios (every call a function makes, judged against its role)")
    header = f"{'scenario':<24} {'functions':>9} {'distinct':>8} {'checked':>8} {'evaluated':>9} {'denied':>6}"
    print(f"{header}  wall seconds with / without the check")
    for name in SCENARIOS:
        _replay(name, checked=True)  # imports, the template's expansion and the reference data, once
        with_check, checks, counted = _replay(name, checked=True)
        without_check, _, _ = _replay(name, checked=False)
        functions = {f for c in checks for f in c.calls}
        distinct = sum(len(calls) for c in checks for calls in c.calls.values())
        evaluated = sum(len(c._decisions) for c in checks)
        denied = sum(len(c.problems()) for c in checks)
        print(
            f"{name:<24} {len(functions):>9} {distinct:>8} {counted:>8} {evaluated:>9} {denied:>6}"
            f"  replayed in (wallSeconds) {with_check:.1f} {without_check:.1f}"
        )


if __name__ == "__main__":
    main()
