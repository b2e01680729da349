"""What kind of test a test is, for `pytest -m unit` (the fast loop) and its siblings, read from
where it lives and from what it runs, so no file has to move and no test has to say it:

- contract: the template, the permissions, the import architecture and the docs (their folders).
- scenario: replays sandbox scenarios (it, or a fixture or helper of its, calls one of the
  sandbox's replays or runs the `sandbox` command).
- stack: starts the local stack (it, a fixture or a helper calls start_local_stack).
- unit: everything else: no local stack.

"Calls" follows the names a function's code uses through the functions of the test tree
(conftest, the helper modules, the module itself), so a helper that starts a stack counts."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

TESTS = Path(__file__).resolve().parent
KINDS = ("unit", "stack", "scenario", "contract")
CONTRACT_PATHS = (
    "template/",
    "architecture/",
    "scripts/",
    "examples/test_docs_include_examples.py",
    "devtools/local/permissions/",
)
"""Under tests/: the template, the import contracts, what the docs show, the permissions as IAM
evaluates them."""
SCENARIO_CALLS = frozenset({"run_scenario", "run_fleet", "fleet_stack", "run_plain_batch", "run_scoring", "sandbox"})
"""What replays a scenario (spotline_dev.harness.sandbox's functions that start a stack), by name, or the
word the code holds (`cli_main(["sandbox", ...])`)."""
STACK_CALLS = frozenset({"start_local_stack"})


def _names(code: CodeType) -> Iterable[str]:
    """The global and attribute names a code object uses and the strings it holds, its nested
    functions' included."""
    yield from code.co_names
    yield from _constants(code.co_consts)


def _constants(constants: Iterable[object]) -> Iterable[str]:
    """The strings among `constants`, in the tuples a constant list compiles to too."""
    for constant in constants:
        if isinstance(constant, CodeType):
            yield from _names(constant)
        elif isinstance(constant, str):
            yield constant
        elif isinstance(constant, tuple | frozenset):
            yield from _constants(constant)


def _in_tree(file: str | None) -> bool:
    return file is not None and Path(file).resolve().is_relative_to(TESTS)


def _in_tests(function: FunctionType) -> bool:
    return _in_tree(function.__code__.co_filename)


def calls(function: Callable[..., Any], targets: frozenset[str], seen: set[CodeType] | None = None) -> bool:
    """Whether `function` uses one of `targets` by name, itself or through a function of the
    test tree it names."""
    function = inspect.unwrap(getattr(function, "__func__", function))
    if not isinstance(function, FunctionType):
        return False
    seen = set() if seen is None else seen
    if function.__code__ in seen:
        return False
    seen.add(function.__code__)
    names = set(_names(function.__code__))
    if names & targets:
        return True
    return any(calls(found, targets, seen) for found in _helpers(names, function.__globals__))


def _helpers(names: set[str], namespace: dict[str, Any]) -> Iterable[FunctionType]:
    """The test tree's functions among `names`: functions, methods of classes, functions of
    modules (`fault_cases.run`) and functions a module's table holds (`CLEAN_UPS[state]`)."""
    for name in names:
        found = namespace.get(name)
        if isinstance(found, ModuleType) and _in_tree(getattr(found, "__file__", None)):
            candidates = [getattr(found, other, None) for other in names]
        elif isinstance(found, type):
            candidates = list(vars(found).values())
        elif isinstance(found, dict | list | tuple):
            candidates = list(_held(found))
        else:
            candidates = [found]
        for candidate in candidates:
            unwrapped = inspect.unwrap(candidate) if callable(candidate) else candidate  # @contextmanager
            if isinstance(unwrapped, FunctionType) and _in_tests(unwrapped):
                yield unwrapped


def _held(table: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> Iterable[object]:
    """What a dict, list or tuple holds, nested ones included."""
    for value in table.values() if isinstance(table, dict) else table:
        yield from _held(value) if isinstance(value, dict | list | tuple) else (value,)


def kind_of(path: Path, functions: Iterable[Callable[..., Any]]) -> str:
    """The kind of the test in `path` that runs `functions` (the test and its fixtures)."""
    relative = path.resolve().relative_to(TESTS).as_posix()
    if relative.startswith(CONTRACT_PATHS):
        return "contract"
    functions = list(functions)
    if any(calls(function, SCENARIO_CALLS) for function in functions):
        return "scenario"
    if any(calls(function, STACK_CALLS) for function in functions):
        return "stack"
    return "unit"
