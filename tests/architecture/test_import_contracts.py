"""The import-linter contracts in pyproject.toml hold, and they do fail on a violation.

Each deliberate violation is planted in a copy of the layer and must break exactly the
contract written for it: a check that cannot fail would prove nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
IMPORT_LINTER = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = [contract["name"] for contract in IMPORT_LINTER["contracts"]]


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """Run the project's contracts over `tree` (a copy of layers/spotline and devtools)."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'layers' / 'spotline'}{os.pathsep}{tree / 'devtools'}"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("pristine")
    shutil.copytree(ROOT / "layers" / "spotline" / "spotline", tree / "layers" / "spotline" / "spotline")
    shutil.copytree(ROOT / "devtools" / "spotline_dev", tree / "devtools" / "spotline_dev")
    return tree


def _verdicts(report: str) -> dict[str, str]:
    """Contract name -> KEPT or BROKEN, from lint-imports' report (which wraps long lines)."""
    flat = " ".join(report.split())
    return {name: verdict for name in CONTRACTS for verdict in ("KEPT", "BROKEN") if f"{name} {verdict}" in flat}


def test_the_real_tree_keeps_every_contract() -> None:
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _verdicts(run.stdout) == dict.fromkeys(CONTRACTS, "KEPT")


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("spotline/core/uses_boto3.py", "import boto3", "The domain core is pure"),
        ("spotline/core/uses_botocore.py", "from botocore.validate import ParamValidator", "The domain core is pure"),
        # (the adapters import the core: this one is a cycle as well, and breaks that contract too)
        (
            "spotline/core/uses_adapter.py",
            "from spotline.aws.common.clients import client",
            "The domain core is pure|No import cycles",
        ),
        ("spotline/core/uses_powertools.py", "from aws_lambda_powertools import Logger", "The domain core is pure"),
        ("spotline/training/uses_core.py", "from spotline.core.common import durations", "The training helper"),
        ("spotline/aws/uses_devtools.py", "from spotline_dev.harness import standin", "The layer (what Lambdas run)"),
        # (devtools' tree sits beside the layer's)
        (
            "../../devtools/spotline_dev/research/simulate/uses_adapter.py",
            "from spotline.aws.capacity import checking",
            "The simulator",
        ),
        # concept packages of one layer do not know each other; a lower one never imports a higher one
        ("spotline/core/billing/uses_scoring.py", "from spotline.core.scoring import scoring", "The core's concept"),
        ("spotline/aws/regions/uses_state.py", "from spotline.aws.state import progress", "The adapters' concept"),
        # (aws.training imports aws.capacity: this one is a cycle as well)
        (
            "spotline/aws/capacity/uses_training.py",
            "from spotline.aws.training import submission",
            "The adapters' concept|No import cycles",
        ),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    pristine: Path, tmp_path: Path, module: str, line: str, contract: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    (tree / "layers" / "spotline" / module).write_text(f"{line}\n")
    run = _lint_imports(tree)
    assert run.returncode != 0, run.stdout
    broken = sorted(name for name, verdict in _verdicts(run.stdout).items() if verdict == "BROKEN")
    expected = sorted(name for name in CONTRACTS for prefix in contract.split("|") if name.startswith(prefix))
    assert broken == expected, run.stdout


@pytest.mark.parametrize(
    ("module", "line"),
    [
        # two modules of one package (the issue's own: the stack and the module it is built by)
        ("devtools/spotline_dev/harness/local/handles.py", "from spotline_dev.harness.local import stack"),
        # two sub-packages: the local stack reaching back into the sandbox that drives it
        ("devtools/spotline_dev/harness/local/template.py", "from spotline_dev.harness.sandbox import scenario"),
        # inside the stand-in's Batch: a queue reaching for the jobs that use it (a record of the base
        # reaching for Batch would break the stand-in's layers as well: see the test below)
        (
            "devtools/spotline_dev/harness/standin/batch/queues.py",
            "from spotline_dev.harness.standin.batch import jobs",
        ),
        # in the layer: the pure core reaching back to a module that imports it (inside one concept
        # package: between two packages, the layers contracts would break as well)
        ("layers/spotline/spotline/core/capacity/policy.py", "from spotline.core.capacity import lifecycle"),
    ],
)
def test_a_planted_import_cycle_breaks_the_acyclic_contract(
    pristine: Path, tmp_path: Path, module: str, line: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    planted = tree / module
    planted.write_text(planted.read_text() + f"\n{line}  # noqa: E402\n")
    run = _lint_imports(tree)
    assert run.returncode != 0, run.stdout
    broken = [name for name, verdict in _verdicts(run.stdout).items() if verdict == "BROKEN"]
    assert broken == [next(name for name in CONTRACTS if name.startswith("No import cycles"))], run.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # (the command line runs the harness and the simulator: these are cycles too)
        ("harness/sandbox/uses_cli.py", "from spotline_dev.cli import entry", "The harness and|No import"),
        ("research/uses_cli.py", "from spotline_dev.cli.operate import output", "The harness and|No import"),
        ("research/uses_harness.py", "from spotline_dev.harness.standin import SpotWeather", "The research tools"),
        ("explain/uses_cli.py", "from spotline_dev.cli.operate import output", "What the command line|No import"),
        ("exit_codes.py", "from spotline_dev.harness.sandbox import replay", "What the command line|No import"),
        (
            "harness/standin/base/records_use_batch.py",
            "from spotline_dev.harness.standin.batch import jobs",
            "The stand-in's Batch|No import",
        ),
        (
            "harness/standin/sagemaker/uses_batch.py",
            "from spotline_dev.harness.standin.batch import queues",
            "The stand-in's Batch|No import",
        ),
    ],
)
def test_a_planted_import_breaks_the_devtools_products_contract(
    pristine: Path, tmp_path: Path, module: str, line: str, contract: str
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree)
    (tree / "devtools" / "spotline_dev" / module).write_text(f"{line}\n")
    run = _lint_imports(tree)
    assert run.returncode != 0, run.stdout
    broken = sorted(name for name, verdict in _verdicts(run.stdout).items() if verdict == "BROKEN")
    expected = sorted(name for name in CONTRACTS for prefix in contract.split("|") if name.startswith(prefix))
    assert broken == expected, run.stdout
