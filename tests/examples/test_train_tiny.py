"""examples/train_tiny.py, interrupted for real: SIGTERM (save, exit 0, resume from that step) and
SIGKILL (resume from the last periodic checkpoint) both end with the weights of an uninterrupted run.

It runs under .venv-example (Python 3.11 with the CPU build of torch), which `make example-venv`
creates; without it this test fails rather than skips, so CI cannot pass by not running it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-example" / "bin" / "python"
SCRIPT = ROOT / "examples" / "train_tiny.py"
TOTAL = 2000
# Interrupted runs: 5 ms a step (>= 10 s for the whole run) and a checkpoint every 0.2 s (~40 steps), so
# the signal lands after a few checkpoints and long before the end even on a slow machine.
SLOW = ["--step-sleep", "0.005", "--interval-seconds", "0.2"]
TIMEOUT = 60.0


@dataclass
class Run:
    process: subprocess.Popen[bytes]
    workdir: Path

    @property
    def checkpoints(self) -> Path:
        return self.workdir / "checkpoints"

    def events(self) -> dict[str, dict[str, Any]]:
        lines = (self.workdir / "stdout").read_text().splitlines()
        return {event["event"]: event for event in map(json.loads, lines)}

    def stderr(self) -> str:
        return (self.workdir / "stderr").read_text()[-3000:]

    def progress(self) -> dict[str, Any] | None:
        try:  # replaced atomically by the helper: absent or complete, never half-written
            return json.loads((self.checkpoints / "progress.json").read_text())  # type: ignore[no-any-return]
        except FileNotFoundError:
            return None

    def saved_steps(self) -> list[int]:
        return sorted(int(path.name.split("-")[1]) for path in self.checkpoints.glob("checkpoint-*"))

    def wait(self, timeout: float = TIMEOUT) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"train_tiny.py did not finish within {timeout} s:\n{self.stderr()}")


def start(workdir: Path, *flags: str) -> Run:
    """Run the example with everything under `workdir` (same checkpoint dir when run again)."""
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON.relative_to(ROOT)} is missing: run `make example-venv` (Python 3.11 + CPU torch)")
    workdir.mkdir(parents=True, exist_ok=True)
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SM_", "SPOTLINE_", "PYTHON", "VIRTUAL_ENV"))
    }
    environment |= {"PYTHONPATH": str(ROOT / "layers" / "spotline"), "PYTHONUNBUFFERED": "1"}
    command = [str(PYTHON), str(SCRIPT), "--total-steps", str(TOTAL)]
    command += ["--checkpoint-dir", str(workdir / "checkpoints"), "--model-dir", str(workdir / "model")]
    command += ["--config-dir", str(workdir / "no-config"), *flags]  # no /opt/ml/input/config of the machine
    with open(workdir / "stdout", "w") as stdout, open(workdir / "stderr", "a") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=environment, cwd=workdir)
    return Run(process, workdir)


@pytest.fixture
def running() -> Iterator[list[Run]]:
    """Runs a test started; any still alive at the end (a failed assertion) are killed."""
    runs: list[Run] = []
    yield runs
    for run in runs:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


def wait_for_checkpoint(run: Run, at_least: int = 1) -> int:
    """Poll until progress.json says `at_least` steps are saved; returns its step."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        progress = run.progress()
        if progress and progress["step"] >= at_least:
            assert progress["totalSteps"] == TOTAL
            return int(progress["step"])
        if run.process.poll() is not None:
            pytest.fail(f"train_tiny.py exited ({run.process.returncode}) before a checkpoint:\n{run.stderr()}")
        time.sleep(0.01)
    pytest.fail(f"no checkpoint within {TIMEOUT} s:\n{run.stderr()}")


def finish(run: Run) -> dict[str, Any]:
    assert run.wait() == 0, run.stderr()
    done = run.events()["done"]
    assert done["totalSteps"] == TOTAL
    progress = run.progress()
    assert progress and (progress["step"], progress["totalSteps"]) == (TOTAL, TOTAL)
    assert (run.workdir / "model" / "model.pt").is_file()
    return done


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference: one run start to end, no sleeping, no periodic checkpoint."""
    run = start(tmp_path_factory.mktemp("uninterrupted"))
    done = finish(run)  # (kills it on a timeout)
    assert done["resumedFrom"] == 0
    assert run.saved_steps() == [TOTAL]
    return done


def test_sigterm_saves_where_it_is_exits_0_and_the_resumed_run_ends_with_the_same_weights(
    tmp_path: Path, uninterrupted: dict[str, Any], running: list[Run]
) -> None:
    first = start(tmp_path, *SLOW)
    running.append(first)
    periodic = wait_for_checkpoint(first)

    first.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    assert first.wait(timeout=30) == 0, first.stderr()
    assert time.monotonic() - sent < 10, "SageMaker allows 120 s; one step plus one save should take milliseconds"

    stopped = first.events()["stopped"]["step"]
    progress = first.progress()
    assert progress and progress["step"] == stopped and progress["totalSteps"] == TOTAL
    assert periodic < stopped < TOTAL  # saved at the step it reached, after the last periodic save
    assert stopped in first.saved_steps() and len(first.saved_steps()) <= 2
    assert "done" not in first.events()

    second = start(tmp_path)
    running.append(second)
    done = finish(second)
    assert second.events()["start"]["resumedFrom"] == stopped
    assert (done["weightsSha256"], done["finalLoss"]) == (uninterrupted["weightsSha256"], uninterrupted["finalLoss"])


def test_sigkill_resumes_from_the_last_periodic_checkpoint_and_ends_with_the_same_weights(
    tmp_path: Path, uninterrupted: dict[str, Any], running: list[Run]
) -> None:
    first = start(tmp_path, *SLOW)
    running.append(first)
    wait_for_checkpoint(first, at_least=60)  # past the first periodic save, mid-interval of a later one

    first.process.send_signal(signal.SIGKILL)
    assert first.wait(timeout=30) == -signal.SIGKILL
    assert "stopped" not in first.events()

    progress = first.progress()
    saved = first.saved_steps()
    assert progress and progress["step"] in saved  # progress.json names a checkpoint that is there
    newest = max(saved)
    assert 0 < progress["step"] <= newest < TOTAL  # newer only if killed between the checkpoint and progress.json

    second = start(tmp_path)
    running.append(second)
    done = finish(second)
    assert second.events()["start"]["resumedFrom"] == newest
    assert (done["weightsSha256"], done["finalLoss"]) == (uninterrupted["weightsSha256"], uninterrupted["finalLoss"])
