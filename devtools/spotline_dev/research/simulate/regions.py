"""`spotline simulate --regions`: the traces' zones grouped into regions, a job free to run in any
of them, and the policies that use that freedom.

**Places.** A trace file's zone (`us-west-2b_v100_1.json` -> zone us-west-2b) names its region
(us-west-2). Within one set of traces (one folder, one GPU shape), a region has spot capacity in
a step when any of its zones has: SageMaker picks the zone itself when no subnets pin it.
On-demand is available in every region at the same price.

**Moving.** An attempt in another region than the latest checkpoint's starts with a copy of it
(`spotline.core.regions.regions.copy_estimate` for `--checkpoint-gib`: its time before the start-up, its
transfer price in the job's cost).

**Policies across regions** (`REGION_POLICIES`):

- `on-demand`: on-demand from the start (in the first region).
- `greedy`: spot wherever there is capacity now (the current region first, else the first that
  has some, paying the move), until the last safe moment, then on-demand for good.
- `uniform`: Uniform Progress with "spot available" meaning in any region, moving as `greedy`.
- `eager-next-region`, `eager-next-region-fixed`: SkyPilot's managed-job recovery
  `EAGER_NEXT_REGION` as shipped (skypilot-org/skypilot#10021: the preempted region is never
  blocked) and as PR #10074 would fix it; spot only, no deadline
  (`spotline_dev.research.simulate.region_peers`).
- `skynomad`: a SkyNomad-like placement (arXiv 2601.06520; `region_peers`).
- `spotline`: the production policy (`SpotlinePolicy`) across regions: it places its spot
  attempt by the fleet's sightings (`spotline.core.regions.regions.choose_region`, as SubmitTrainingJob
  does), and `spotline.core.capacity.assess.assess` moves a stuck one; the copy's time counts in its
  restart estimate, and its region moves follow the same hysteresis (blocked regions, a move
  only when it saves more than the copy, a bounded count: `Outcome.moves`). It never sees capacity
  directly, only the fleet's record (`View.sighted`, at most `SIGHTING_SECONDS` old) and its own
  waits and interruptions.

The greedy and uniform baselines see capacity in every region at every step, as in the paper's
simulator; per region (pinned), every single-region policy runs too (`singleRegion`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from spotline.core.capacity.assess import Assessment
from spotline.core.capacity.observation import FleetRecord, History, Observation
from spotline.core.regions.regions import GIB, Sighting, choose_region, latest_sightings
from spotline_dev.research.simulate.model import SIGHTING_SECONDS, Command, Job, Outcome, Policy, View, simulate
from spotline_dev.research.simulate.policies import (
    FIRST_POLL_SECONDS,
    Greedy,
    OnDemandOnly,
    SpotlinePolicy,
    UniformProgress,
)
from spotline_dev.research.simulate.region_peers import EagerNextRegion, SkyNomad
from spotline_dev.research.traces import Trace

_ZONE = re.compile(r"^(?P<region>[a-z]{2}(?:-gov)?-[a-z]+-\d+)[a-z]$")


def region_of_zone(zone: str) -> str | None:
    """`us-west-2b` -> `us-west-2`; None for a name that is not a zone."""
    match = _ZONE.match(zone)
    return match["region"] if match else None


@dataclass(frozen=True, slots=True)
class RegionSet:
    """One set of traces as regions: `zones[r]` are the traces of `regions[r]`."""

    name: str
    regions: tuple[str, ...]
    zones: tuple[tuple[Trace, ...], ...]

    @property
    def duration_seconds(self) -> float:
        return min(t.duration_seconds for zones in self.zones for t in zones)

    def availability(self, step_seconds: float, offset_seconds: float, steps: int) -> npt.NDArray[np.bool_]:
        """(regions, steps): spot in a region when any of its zones has it for the whole step."""
        return np.stack(
            [
                np.any([t.availability(step_seconds, offset_seconds, steps) for t in zones], axis=0)
                for zones in self.zones
            ]
        )


def region_sets(traces: Sequence[Trace]) -> list[RegionSet]:
    """The traces grouped by set (folder and GPU shape), then by region, in name order. A trace
    whose zone names no region is left out (the caller says so)."""
    sets: dict[str, dict[str, list[Trace]]] = {}
    for trace in traces:
        region = region_of_zone(trace.config.zone)
        if region is None:
            continue
        folder = trace.source.rsplit("/", 1)[0] if "/" in trace.source else "."
        name = f"{folder}/{trace.config.gpu_count}x{trace.config.gpu_type}"
        sets.setdefault(name, {}).setdefault(region, []).append(trace)
    return [
        RegionSet(name, tuple(sorted(by_region)), tuple(tuple(by_region[r]) for r in sorted(by_region)))
        for name, by_region in sorted(sets.items())
    ]


# --- policies across regions -------------------------------------------------------------------


def _spot_region(view: View) -> int | None:
    """The current region when it has spot now, else the first that has; None when none has."""
    if view.regions_available[view.region]:
        return view.region
    return next((r for r, up in enumerate(view.regions_available) if up), None)


def _stuck(view: View) -> bool:
    return view.phase in ("idle", "waiting", "interrupted")


class GreedyAcrossRegions(Greedy):
    """Greedy, its restart a move's (the checkpoint copy first), on spot wherever it sees capacity."""

    def restart(self, job: Job) -> int:
        return job.overhead + job.copy

    def decide(self, view: View) -> Command:
        command = super().decide(view)
        if command.capacity != "spot":
            return command
        region = view.region
        if view.capacity == "none" or _stuck(view):
            found = _spot_region(view)
            region = view.region if found is None else found
        return Command("spot", command.wake_at, region=region)


class UniformAcrossRegions(UniformProgress):
    """Uniform Progress where spot is available when any region has it, moving as `greedy` does."""

    def decide(self, view: View) -> Command:
        spot_region = _spot_region(view)
        job = view.job
        wider = replace(
            view, spot_available=spot_region is not None, job=replace(job, overhead=job.overhead + job.copy)
        )
        command = super().decide(wider)
        if command.capacity != "spot":
            return command
        region = view.region
        if (view.capacity == "none" or _stuck(view)) and spot_region is not None:
            region = spot_region
        return Command("spot", command.wake_at, region=region)


class SpotlineAcrossRegions(SpotlinePolicy):
    """The production policy across regions: placed by the fleet's sightings (`choose_region`, as
    SubmitTrainingJob places a first attempt), then `assess` at each check moves a stuck attempt,
    its restart estimate including the checkpoint copy."""

    def __init__(self, job: Job, start: datetime, regions: Sequence[str], checkpoint_bytes: int) -> None:
        super().__init__(job, start)
        self.name = "spotline"
        self.regions = tuple(regions)
        self.checkpoint_bytes = checkpoint_bytes
        self.choices: list[str] = []
        """The reason of every region choice, in order."""

    def fleet(self, view: View) -> FleetRecord:
        """The fleet's latest sightings (`View.sighted`) and this job's own, and its day's record."""
        seen = self._at(view.t - view.t % max(1, SIGHTING_SECONDS // self.job.step_seconds))
        fleet = [Sighting(region, seen, up) for region, up in zip(self.regions, view.sighted, strict=True)]
        now = self._at(view.t)
        return FleetRecord(
            latest_sightings([*fleet, *self.own], now), dict(zip(self.regions, view.records, strict=True))
        )

    def checkpoint_size(self, view: View) -> int:
        return self.checkpoint_bytes if view.checkpointed else 0

    def observe(self, view: View) -> tuple[Observation, History]:
        """As the Lambda reads the state: each attempt with its region (`$.training.region`)."""
        observation, history = super().observe(view)
        current = replace(history.current, region=self.regions[view.region])
        return observation, replace(history, current=current)

    def copy_seconds(self) -> float:
        return self.job.copy * self.job.step_seconds if len(self.regions) > 1 else 0.0

    def assess(self, view: View) -> Assessment:
        assessed = super().assess(view)
        if assessed.region_choice is not None:
            self.choices.append(assessed.region_choice.reason)
        return assessed

    def _place(self, view: View) -> Command:
        """The first attempt's region (SubmitTrainingJob's choice)."""
        fleet = self.fleet(view)
        choice = choose_region(
            situation="placing",
            current=self.regions[view.region],
            allowed=self.regions,
            sightings=fleet.latest,
            restart_seconds=self.overhead,
            checkpoint_bytes=self.checkpoint_size(view),
            checkpoint_region=self.regions[view.checkpoint_region],
            records=fleet.records,
            remaining_seconds=view.remaining * self.job.step_seconds,
            checkpoint_interval_seconds=(self.job.checkpoint or 0) * self.job.step_seconds,
        )
        self.choices.append(choice.reason)
        self._wake = view.t + self._steps(FIRST_POLL_SECONDS)
        self._preemptions = 0
        return Command("spot", self._wake, region=self.regions.index(choice.region))

    def decide(self, view: View) -> Command:
        if view.capacity == "none":
            return self._place(view)
        ended = len(self.previous)
        command = super().decide(view)
        if len(self.previous) > ended:  # the attempt left: where it ran and what it trained there
            trained = view.trained_in_attempt * self.job.step_seconds
            self.previous[-1] = replace(self.previous[-1], region=self.regions[view.region], training_seconds=trained)
        return command


RegionPolicyFactory = Callable[[Job, datetime, Sequence[str], int], Policy]

REGION_POLICIES: dict[str, RegionPolicyFactory] = {
    "on-demand": lambda job, start, regions, size: OnDemandOnly(),
    "greedy": lambda job, start, regions, size: GreedyAcrossRegions(),
    "uniform": lambda job, start, regions, size: UniformAcrossRegions(),
    "eager-next-region": lambda job, start, regions, size: EagerNextRegion(len(regions)),
    "eager-next-region-fixed": lambda job, start, regions, size: EagerNextRegion(len(regions), blocks_preempted=True),
    "skynomad": lambda job, start, regions, size: SkyNomad(len(regions), size),
    "spotline": SpotlineAcrossRegions,
}
"""Every policy of the across-regions table by name."""


def run_region_policy(
    name: str,
    job: Job,
    *,
    available: npt.NDArray[np.bool_],
    start: datetime,
    regions: Sequence[str],
    checkpoint_gib: float,
    history: npt.NDArray[np.bool_] | None = None,
) -> Outcome:
    policy = REGION_POLICIES[name](job, start, regions, round(checkpoint_gib * GIB))
    return simulate(job, available, policy, history)


__all__ = [
    "REGION_POLICIES",
    "EagerNextRegion",
    "GreedyAcrossRegions",
    "RegionSet",
    "SkyNomad",
    "SpotlineAcrossRegions",
    "UniformAcrossRegions",
    "region_of_zone",
    "region_sets",
    "run_region_policy",
]
