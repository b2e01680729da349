"""Fixtures for the `spotline simulate` tests: availability arrays, small jobs, and spot
availability logs written to tmp_path in the real logs' line forms; the real logs stay in
../shared and are never read by these tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from spotline_dev.research.simulate import Job

START = datetime(2020, 3, 15, 10, 0, tzinfo=UTC)
HOUR = 3600
Flags = npt.NDArray[np.bool_]


def flags(pattern: str) -> Flags:
    """'1' = spot capacity in that step, '0' = none."""
    return np.array([c == "1" for c in pattern], dtype=np.bool_)


def random_trace(rng: np.random.Generator, steps: int, mean_up: float, mean_down: float) -> Flags:
    """Alternating runs of capacity and gaps with geometric lengths."""
    out: list[bool] = []
    up = bool(rng.random() < 0.7)
    while len(out) < steps:
        length = int(rng.geometric(1 / (mean_up if up else mean_down)))
        out.extend([up] * length)
        up = not up
    return np.array(out[:steps], dtype=np.bool_)


def job(work: int, deadline: int, overhead: int = 3, checkpoint: int | None = 4, **kw: Any) -> Job:
    return Job(work=work, deadline=deadline, overhead=overhead, checkpoint=checkpoint, **kw)


def write_log(path: Path, configs: dict[tuple[str, str, int], str], provider: str) -> None:
    """A log in the real line forms: every 10 minutes each configuration is checked; `pattern`
    has a character per check: '1' capacity, '0' none."""
    lines: list[tuple[datetime, str]] = []
    for index, ((zone, gpu, count), pattern) in enumerate(configs.items()):
        name = f"instance{index}"
        serial = 0
        running = False
        for k, c in enumerate(pattern):
            moment = START + timedelta(minutes=10 * k, seconds=index)

            def add(text: str, moment: datetime = moment) -> None:
                lines.append((moment, text))

            ident = name
            if provider == "aws":
                ident = f"i-{index:04x}{serial:012x}"
            if running and c == "1":
                add(f"Instance {ident} running in zone {zone}")
                continue
            if running:
                add(f"Instance {ident} not running in zone {zone}")
                add(f"Successfully deleted instance {ident}")
                running = False
                serial += 1
                ident = name if provider == "gcp" else f"i-{index:04x}{serial:012x}"
            if c == "1":
                add(f"Created instance {ident} with {count} GPU(s) of type {gpu} in zone {zone}")
                running = True
            elif provider == "gcp":
                add(f"Instance {ident} creation failed")
                add(f"Instance {ident} not running in zone {zone}")
            else:
                add(f"Instance with {count} GPU(s) of type {gpu} creation failed")
    lines.sort(key=lambda item: item[0])
    path.write_text("".join(f"[{m.strftime('%Y-%m-%dT%H:%M:%S.000Z')}] {text}\n" for m, text in lines))


def fixture_logs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2020)
    checks = 6 * 40  # 40 hours
    flaky = "".join("1" if rng.random() < 0.55 else "0" for _ in range(checks))
    runs = "".join(c * int(rng.integers(1, 30)) for c in "10" * 40)[:checks]
    write_log(
        folder / "aws-fixture.log",
        {("us-east-1b", "v100", 1): "1" * checks, ("us-east-1c", "k80", 8): "0" * 30 + "1" * 60 + "0" * 150},
        "aws",
    )
    gappy = ("000" + ("1" * 12 + "00") * 20)[:checks]  # a late start, then short gaps every two hours
    write_log(
        folder / "gcp-fixture.log",
        {
            ("us-west1-b", "nvidia-tesla-v100", 1): flaky,
            ("us-central1-c", "nvidia-tesla-k80", 1): runs,
            ("us-east1-c", "nvidia-tesla-p100", 1): gappy,
        },
        "gcp",
    )
    return folder
