"""The SageMaker training instance types: which names are valid, and what Spotline knows of each.

Validity is the API's own: botocore's SageMaker service model (pinned in the layer) lists every
training instance type as the enum `TrainingInstanceType`. What Spotline adds, where it is known,
is in `data/sagemaker_training_instances.json`: the on-demand training price per hour in the
stack's region and the hardware (accelerators, memory), each figure naming its source and date.
A valid type without a price is still accepted; its costs are unknown, never guessed.

Prices per region: a deployed stack reads them from AWS's Price List API (`spotline.aws.billing.pricing`)
and hands them in as a price book (`priced_by`); the bundled table is the fallback, and only for
its own region. Every price names its source (`Price.source`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
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


PRICE_LIST_API = "price-list-api"
"""`Price.source` of a price read from AWS's Price List API (GetProducts)."""
BUNDLED_TABLE = "table"
"""`Price.source` of a price from the bundled table (`data/sagemaker_training_instances.json`)."""


@dataclass(frozen=True, slots=True)
class Price:
    """The on-demand training price of one instance type in one region, per instance-hour."""

    usd_per_hour: float
    source: str
    """PRICE_LIST_API or BUNDLED_TABLE."""
    detail: str = ""
    """What exactly: the Price List product (SKU, publication date) or the table's dated source."""

    def to_dict(self) -> dict[str, Any]:
        return {"usdPerHour": self.usd_per_hour, "source": self.source, "detail": self.detail}


PriceBook = Mapping[tuple[str, str], Price]
"""(region, instance type) -> its price, as read for one run."""

_BOOK: ContextVar[PriceBook | None] = ContextVar("spotline_price_book", default=None)


@contextmanager
def priced_by(book: PriceBook) -> Iterator[None]:
    """Inside, `training_price` answers from `book` first (the prices an adapter read for this
    run), then from the bundled table. A context variable, so the cost functions keep their
    signatures and concurrent runs (the local stack's threads) each see their own book."""
    token = _BOOK.set(book)
    try:
        yield
    finally:
        _BOOK.reset(token)


def tabled_price(name: str, region: str) -> Price | None:
    """The bundled table's price of `name`: only in the table's own region (elsewhere a price
    would be another region's, made up)."""
    known = _facts().get(name) if region == price_region() else None
    if known is None or known.usd_per_hour is None:
        return None
    source = known.price_source
    detail = f"{source.title} ({source.date})" if source else ""
    return Price(known.usd_per_hour, BUNDLED_TABLE, detail)


def training_price(name: str, region: str) -> Price | None:
    """The on-demand training price of `name` in `region`: the run's price book (`priced_by`),
    else the bundled table; None: unknown there."""
    book = _BOOK.get()
    if book is not None and (region, name) in book:
        return book[(region, name)]
    return tabled_price(name, region)


def family_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name
