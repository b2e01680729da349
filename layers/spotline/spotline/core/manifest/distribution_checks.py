"""The checks of `spec.distribution` that span fields (pure): what the schema's shape cannot say."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spotline.core.common.errors import ManifestError
from spotline.core.common.json_schemas import dig as _get
from spotline.core.spec.model import DEFAULT_INSTANCE_COUNT, Distribution


def distribution_errors(spec: Any) -> Iterator[ManifestError]:
    distribution = _get(spec, "distribution")
    if not isinstance(distribution, dict):
        return
    launcher = distribution.get("launcher")
    if "processesPerHost" in distribution and launcher in ("torchrun", "smddp"):
        yield ManifestError(
            "spec.distribution.processesPerHost",
            f"applies to mpi only: {launcher} starts one process per GPU; remove it or choose launcher mpi",
        )
    resources = _get(spec, "resources")
    primary = _get(resources, "instanceCount") or DEFAULT_INSTANCE_COUNT
    alternatives = _get(resources, "alternatives")
    listed = alternatives if isinstance(alternatives, list) else []
    counts = [primary, *(_get(a, "instanceCount") or primary for a in listed)]
    if distribution.get("efa") is True and all(isinstance(c, int) and c == 1 for c in counts):
        yield ManifestError(
            "spec.distribution.efa",
            "needs more than one instance: EFA carries traffic between instances (resources.instanceCount is 1)",
        )
    if listed and _get(spec, "checkpoint", "format") != "dcp":
        # A per-rank checkpoint holds one shard per rank: another type or count is another world.
        yield ManifestError(
            "spec.resources.alternatives",
            "a distributed job moves to another instance type or count only with a checkpoint that "
            "loads into another number of ranks: set spec.checkpoint.format to dcp (PyTorch "
            "Distributed Checkpoint) or remove the alternatives",
        )


def build_distribution(raw: Any) -> Distribution | None:
    """`spec.distribution` as the normalized spec keeps it (a valid document's)."""
    if not isinstance(raw, dict):
        return None
    return Distribution(
        launcher=str(raw["launcher"]),
        processes_per_host=raw.get("processesPerHost"),
        efa=bool(raw.get("efa", False)),
    )
