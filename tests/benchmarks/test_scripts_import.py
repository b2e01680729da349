"""The benchmark scripts `make bench` runs are not run by the tests (they take minutes), so at
least everything they import must exist: a module split once left two of them broken."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[path.name for path in BENCHMARKS])
def test_the_script_loads_with_everything_it_imports(script: Path) -> None:
    namespace = runpy.run_path(str(script), run_name="benchmark_loaded_by_test")  # not "__main__": no run

    assert namespace["__doc__"], "a benchmark says what it prints"
