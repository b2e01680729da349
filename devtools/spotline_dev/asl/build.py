"""Writing the state machine files from their Python (`make asl`), or checking that the committed
ones are what a fresh build writes (`--check`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from spotline_dev.asl.builder import Workflow
from spotline_dev.asl.lifecycle import training_lifecycle
from spotline_dev.asl.scoring import scoring_run

PROJECT_ROOT = Path(__file__).resolve().parents[3]

# statemachines/<name>.asl.json: template.yaml's DefinitionUri for each state machine.
MACHINES: dict[str, Callable[[], Workflow]] = {
    "training_lifecycle": training_lifecycle,
    "scoring_run": scoring_run,
}


def asl_path(name: str, root: Path = PROJECT_ROOT) -> Path:
    return root / "statemachines" / f"{name}.asl.json"


def stale(root: Path = PROJECT_ROOT) -> list[str]:
    """The machines whose committed file is not what a fresh build writes."""
    return [
        name
        for name, build in MACHINES.items()
        if not asl_path(name, root).is_file() or asl_path(name, root).read_text() != build().to_text()
    ]


def write(root: Path = PROJECT_ROOT) -> list[Path]:
    """Writes every machine's file; returns the ones whose text changed."""
    changed = []
    for name, build in MACHINES.items():
        path = asl_path(name, root)
        text = build().to_text()
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spotline_dev.asl", description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not a fresh build")
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale()
        for name in outdated:
            print(f"{asl_path(name).relative_to(PROJECT_ROOT)} is not what its Python builds: run make asl")
        return 1 if outdated else 0
    for path in write():
        print(f"wrote {path.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
