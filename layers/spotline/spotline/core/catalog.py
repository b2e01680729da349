"""The SageMaker training instance types: which names are valid, and what Spotline knows of each.

Validity is the API's own: botocore's SageMaker service model (pinned in the layer) lists every
training instance type as the enum `TrainingInstanceType`. What Spotline adds, where it is known,
is in `data/sagemaker_training_instances.json`: the on-demand training price per hour in the
stack's region and the hardware (accelerators, memory), each figure naming its source and date.
A valid type without a price is still accepted; its costs are unknown, never guessed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

TABLE = "data/sagemaker_training_instances.json"


@dataclass(frozen=True, slots=True)
class Source:
    title: str
    url: str
    date: str


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    usd_per_hour: float | None = None
    """On-demand training price per instance-hour in `price_region()`; None: not in the table."""
    accelerator: str | None = None
    """`NVIDIA L4`, `AWS Trainium2`...; None for a CPU-only type, or one without hardware facts."""
    accelerators: int | None = None
    memory_gib: float | None = None
    price_source: Source | None = None
    hardware_source: Source | None = None

    @property
    def family(self) -> str:
        """`ml.g5.2xlarge` -> `g5`."""
        return family_of(self.name)


@cache
def training_instance_type_names() -> tuple[str, ...]:
    """Every instance type CreateTrainingJob accepts, from botocore's SageMaker model. Loaded on
    first use (about 0.2 s, once per process): only validation needs it."""
    import botocore.loaders  # noqa: PLC0415  (its import takes 0.3 s; the model is package data: no AWS call)

    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return tuple(sorted(model["shapes"]["TrainingInstanceType"]["enum"]))


@cache
def transform_instance_type_names() -> frozenset[str]:
    """Every instance type CreateTransformJob accepts (the enum `TransformInstanceType`), as
    training_instance_type_names reads its own."""
    import botocore.loaders  # noqa: PLC0415  (as above)

    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return frozenset(model["shapes"]["TransformInstanceType"]["enum"])


@cache
def _table() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(resources.files("spotline.core").joinpath(TABLE).read_text())
    return loaded


def price_region() -> str:
    return str(_table()["region"])


def _source(key: str | None) -> Source | None:
    if key is None:
        return None
    entry = _table()["sources"][key]
    return Source(entry["title"], entry["url"], entry["date"])


@cache
def _facts() -> dict[str, InstanceType]:
    known: dict[str, InstanceType] = {}
    for name, entry in _table()["instances"].items():
        price = entry.get("usdPerHour")
        memory = entry.get("memoryGiB")
        known[name] = InstanceType(
            name,
            usd_per_hour=float(price) if price is not None else None,
            accelerator=entry.get("accelerator"),
            accelerators=entry.get("accelerators"),
            memory_gib=float(memory) if memory is not None else None,
            price_source=_source(entry.get("priceSource")),
            hardware_source=_source(entry.get("hardwareSource")),
        )
    return known


def tabled_instance_type_names() -> list[str]:
    """The types of the table (what the check against botocore's model covers)."""
    return sorted(_facts())


def known_facts(name: str) -> InstanceType | None:
    """What the table holds of `name` (no validity check: for costs, which need no botocore)."""
    return _facts().get(name)


def instance_type(name: str) -> InstanceType | None:
    """`name` when SageMaker accepts it for training (with the facts the table has, perhaps
    none); None when it is no training instance type."""
    if name not in training_instance_type_names():
        return None
    return _facts().get(name) or InstanceType(name)


def family_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name
