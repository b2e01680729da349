"""How fast a job runs on each instance type it may use (pure): measured where progress.json's
`byInstanceType` says (steps done there and the seconds they took), declared
(`resources.alternatives[].speed`) where it does not yet. Speeds are relative to the primary
type, whose work the manifest's expectedDuration declares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from spotline.core.spec.model import JobSpec

MIN_MEASURED_SECONDS = 600.0
"""Training time on a type before its throughput counts as measured (start-up noise below it)."""


@dataclass(frozen=True, slots=True)
class TypeSpeed:
    instance_type: str
    speed: float
    """Relative to the primary type (0.5: half as fast)."""
    source: Literal["measured", "declared"]

    def to_dict(self) -> dict[str, Any]:
        return {"instanceType": self.instance_type, "speed": round(self.speed, 3), "source": self.source}


def measured_throughputs(by_type: Mapping[str, Any] | None) -> dict[str, float]:
    """Steps per second on each type with enough training time behind it."""
    throughputs = {}
    for name, entry in (by_type or {}).items():
        try:
            steps, seconds = float(entry["steps"]), float(entry["seconds"])
        except (KeyError, TypeError, ValueError):
            continue
        if steps > 0 and seconds >= MIN_MEASURED_SECONDS:
            throughputs[str(name)] = steps / seconds
    return throughputs


def primary_throughput(spec: JobSpec, throughputs: Mapping[str, float]) -> float | None:
    """Steps per second on the primary type: measured there, else from the first measured type and
    its declared speed; None when nothing is measured."""
    for option in spec.instance_options:
        if option.instance_type in throughputs:
            return throughputs[option.instance_type] / option.speed
    return None


def type_speeds(spec: JobSpec, by_type: Mapping[str, Any] | None) -> list[TypeSpeed]:
    """Each type's speed relative to the primary, the primary first: measured where both it and the
    primary have measured throughput, else declared. (The work estimate uses any measured
    throughput through `primary_throughput`; a relative speed needs both ends.)"""
    throughputs = measured_throughputs(by_type)
    reference = throughputs.get(spec.instance_type)
    speeds = []
    for option in spec.instance_options:
        if reference and option.instance_type in throughputs:
            speeds.append(TypeSpeed(option.instance_type, throughputs[option.instance_type] / reference, "measured"))
        else:
            speeds.append(TypeSpeed(option.instance_type, option.speed, "declared"))
    return speeds


def slowest_speed(progress: dict[str, Any]) -> float:
    """The speed of the slowest type the job may run on, relative to the primary (measured where
    progress.json says, else declared): on-demand may land on any of them (InstancePreferences),
    so the policy plans with the slowest."""
    return min((float(s["speed"]) for s in progress.get("speeds") or []), default=1.0)


def fastest_speed(progress: dict[str, Any]) -> float:
    """The speed of the fastest type the job may run on, relative to the primary."""
    return max((float(s["speed"]) for s in progress.get("speeds") or []), default=1.0)
