"""setuptools' explicit package list (pyproject.toml) names every package of the tree.

The editable install the tests run on finds sub-packages through the file system, so a package
missing from the list goes unnoticed until a wheel of the project lacks it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _packages_in_tree() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for name, folder in {"spotline": "layers/spotline/spotline", "spotline_dev": "devtools/spotline_dev"}.items():
        base = ROOT / folder
        assert config["package-dir"].get(name, config["package-dir"].get("")) in folder
        for init in base.rglob("__init__.py"):
            found.add(".".join((name, *init.parent.relative_to(base).parts)))
    return found


def test_every_package_of_the_tree_is_in_setuptools_package_list() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert sorted(_packages_in_tree() - listed) == []
    data_folders = {"spotline.core.data", "spotline.core.schemas", "spotline_dev.schemas"}  # package data
    assert sorted(listed - _packages_in_tree() - data_folders) == []
