"""What Lambda packages may import: the layer's dependencies and the standard library only.

The sandbox, the stand-in, moto, the `sagemaker` SDK (~1 GB) and torch belong to developer
tooling; a handler importing them would break (or bloat) the deployed function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "spotline" / "spotline"
TRAINING_SIDE = LAYER / "training"  # runs in the training container, standard library only
LAYER_CODE = [path for path in LAYER.rglob("*.py") if TRAINING_SIDE not in path.parents]
LAMBDA_CODE = sorted([*ROOT.glob("functions/*/*.py"), *LAYER_CODE])
LAYER_REQUIREMENTS = (ROOT / "layers" / "spotline" / "requirements.txt").read_text()
THIRD_PARTY = {"aws_lambda_powertools", "boto3", "botocore", "jsonschema", "referencing", "yaml"}
ALLOWED = {"spotline"} | THIRD_PARTY | set(sys.stdlib_module_names)


def imported(path: Path) -> set[str]:
    """Top-level names of the absolute imports in a file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", LAMBDA_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_lambda_code_imports_only_the_layer_and_the_standard_library(path: Path) -> None:
    assert imported(path) <= ALLOWED, imported(path) - ALLOWED


@pytest.mark.parametrize("path", sorted(TRAINING_SIDE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_training_helper_imports_only_the_standard_library(path: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"spotline"}  # spotline.training itself (contract: nothing else)
    assert imported(path) <= allowed, imported(path) - allowed


def test_every_third_party_import_is_in_the_layer_requirements() -> None:
    distributions = {
        "aws_lambda_powertools": "aws-lambda-powertools",
        "boto3": "boto3",
        "botocore": "botocore",
        "jsonschema": "jsonschema",
        "referencing": "referencing",
        "yaml": "PyYAML",
    }
    used = set().union(*(imported(p) for p in LAMBDA_CODE)) - set(sys.stdlib_module_names) - {"spotline"}
    for module in used:
        assert f"{distributions[module]}==".lower() in LAYER_REQUIREMENTS.lower(), module


EXPORT_OPTIONS = ["--no-emit-project", "--no-hashes", "--no-header", "--no-annotate"]


def test_the_layer_requirements_are_the_layer_group_as_locked() -> None:
    """One source: pyproject.toml's `layer` group, resolved in uv.lock; the file `sam build` reads
    is its export (`make lock`), every release pinned."""
    export = subprocess.run(
        [str(Path(sys.executable).with_name("uv")), "export", "--frozen", "--only-group", "layer", *EXPORT_OPTIONS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    def pins(text: str) -> list[str]:
        return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]

    assert pins(LAYER_REQUIREMENTS) == pins(export)
    assert all("==" in pin for pin in pins(LAYER_REQUIREMENTS))
