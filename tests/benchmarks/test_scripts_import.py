"""The benchmark scripts `make bench` runs are not run by the tests (they take minutes), so at
least everything they import must exist: a module split once left two of them broken. Each is
loaded in a process of its own: they set Powertools' environment at import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("*.py"))
LOAD = "import runpy, sys; print(bool(runpy.run_path(sys.argv[1], run_name='loaded_by_test')['__doc__']))"


@pytest.mark.parametrize("script", BENCHMARKS, ids=[path.name for path in BENCHMARKS])
def test_the_script_loads_with_everything_it_imports(script: Path) -> None:
    loaded = subprocess.run([sys.executable, "-c", LOAD, str(script)], check=False, capture_output=True, text=True)

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "True", "a benchmark says what it prints"
