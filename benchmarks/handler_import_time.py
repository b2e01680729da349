"""Benchmark (not a test): how long each Lambda handler takes to import, the part of a cold
start the code controls. Each import runs in a fresh interpreter; the median of 5 is printed.

Run: .venv/bin/python benchmarks/handler_import_time.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from spotline_dev.harness.local.template import powertools_environment

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
PROBE = (
    "import time, importlib.util, sys; t = time.perf_counter(); "
    "spec = importlib.util.spec_from_file_location('app', sys.argv[1]); m = importlib.util.module_from_spec(spec); "
    "spec.loader.exec_module(m); print((time.perf_counter() - t) * 1000)"
)


def import_ms(handler: Path) -> float:
    env = {
        **os.environ,
        **powertools_environment(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "PYTHONPATH": str(ROOT / "layers" / "spotline"),
    }
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", PROBE, str(handler)], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(RUNS)
    ]
    return statistics.median(times)


if __name__ == "__main__":
    results = {path.parent.name: round(import_ms(path), 1) for path in sorted(ROOT.glob("functions/*/app.py"))}
    print(json.dumps({"importMillisecondsMedianOf5": results, "python": sys.version.split()[0]}, indent=2))
