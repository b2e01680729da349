"""The SageMaker training instance types Spotline knows, with on-demand prices (data file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    usd_per_hour: float
    gpus: int

    @property
    def family(self) -> str:
        """`ml.g5.2xlarge` -> `g5`."""
        return self.name.split(".")[1]


@cache
def _load() -> dict[str, InstanceType]:
    raw = json.loads(resources.files("spotline.core").joinpath("data/sagemaker_training_instances.json").read_text())
    return {
        name: InstanceType(name, float(entry["usdPerHour"]), int(entry["gpus"]))
        for name, entry in raw["instances"].items()
    }


def instance_type(name: str) -> InstanceType | None:
    return _load().get(name)


def instance_type_names() -> list[str]:
    return sorted(_load())


def family_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name
