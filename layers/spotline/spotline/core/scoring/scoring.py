"""Scoring jobs (`kind: ScoringJob`): a nightly Batch Transform over an S3 input that must finish
inside its window. The manifest's shape is the schema's (`$defs/scoringSpec`); this module builds
the spec from a valid document, checks what a schema cannot, and places a run in its window.

Which window a run is due in: a night's data belongs to the nearer window. Data ready inside a
window, or before it opens but nearer to it than to the previous one, is due at that window's end
(a run that starts before the window's opening waits for it: the window is when scoring may use
the fleet). Data ready after a window closed but nearer to it than to the next one is late for
that window: it runs at once, due at the end already passed, and says so (WindowAtRisk). A
manifest with a `deadline` instead is due then and starts at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from spotline.core.common.errors import ManifestError
from spotline.core.common.json_schemas import closest_hint
from spotline.core.common.naming import short_hash, slug
from spotline.core.spec.catalog import transform_instance_type_names

DEFAULT_HEADROOM_PERCENT = 30
DEFAULT_SPLIT_TYPE = "Line"
DEFAULT_MAX_CONCURRENT_TRANSFORMS = 1


@dataclass(frozen=True, slots=True)
class ScoringModel:
    """An existing SageMaker model (`name`), or one Spotline registers from image + artifact."""

    name: str | None = None
    image: str | None = None
    artifact: str | None = None
    role_arn: str | None = None


def registered_model_name(team: str, model: ScoringModel) -> str:
    """The SageMaker model Spotline registers for an image + artifact + role (at most 50 of the 63
    characters ModelName allows): one per content, so a night with the same model reuses it, a
    new artifact is a new model (and a new throughput to measure), and the team's name says whose."""
    digest = short_hash(str(model.image), str(model.artifact), str(model.role_arn), length=16)
    return f"spotline-{slug(team, 24) or 'team'}-{digest}"


@dataclass(frozen=True, slots=True)
class ScoringWindow:
    start: time
    end: time
    time_zone: str

    def around(self, moment: datetime) -> tuple[datetime, datetime]:
        """The window a run whose data is ready at `moment` is due in (opening, closing), as the
        module says: the nearer one, the one still open counting as nearest."""
        zone = ZoneInfo(self.time_zone)
        local = moment.astimezone(zone)
        candidates = []
        overnight = timedelta(days=1 if self.end <= self.start else 0)
        for days in (-1, 0, 1):
            day = local.date() + timedelta(days=days)
            opens, closes = datetime.combine(day, self.start, zone), datetime.combine(day + overnight, self.end, zone)
            candidates.append((opens.astimezone(UTC), closes.astimezone(UTC)))  # local times: DST shortens or lengthens
        for opens, closes in candidates:
            if opens <= moment < closes:
                return opens, closes
        return min(
            candidates, key=lambda w: min(abs((moment - w[0]).total_seconds()), abs((moment - w[1]).total_seconds()))
        )


@dataclass(frozen=True, slots=True)
class ScoringSpec:
    team: str
    name: str
    owner: str | None
    model: ScoringModel
    input_s3_uri: str
    content_type: str
    split_type: str
    compression: str | None
    records: int | None  # declared; None: estimated from the input's bytes
    output_s3_uri: str
    accept: str | None
    assemble_with: str | None
    window: ScoringWindow | None
    deadline: datetime | None
    instance_type: str
    max_instances: int
    records_per_second: float | None  # declared, per instance
    headroom_percent: int = DEFAULT_HEADROOM_PERCENT
    max_concurrent_transforms: int = DEFAULT_MAX_CONCURRENT_TRANSFORMS
    max_payload_mb: int | None = None
    environment: tuple[tuple[str, str], ...] = ()
    depends_on: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()

    def due(self, ready_at: datetime) -> tuple[datetime, datetime]:
        """When a run whose data is ready at `ready_at` may start and when it is due."""
        if self.window is None:
            assert self.deadline is not None
            return ready_at, self.deadline
        opens, closes = self.window.around(ready_at)
        return max(opens, ready_at), closes


def scoring_errors(spec: dict[str, Any], *, now: datetime) -> list[ManifestError]:
    """What the schema cannot say of a scoring spec that has its shape."""
    errors = []
    instance = (spec.get("resources") or {}).get("instanceType")
    if isinstance(instance, str) and instance not in transform_instance_type_names():
        hint = closest_hint(instance, transform_instance_type_names()) or "; e.g. ml.c5.2xlarge, ml.m5.4xlarge"
        errors.append(
            ManifestError(
                "spec.resources.instanceType",
                f"{instance} is not a SageMaker Batch Transform instance type (CreateTransformJob "
                f"TransformResources.InstanceType){hint}",
            )
        )
    zone = (spec.get("window") or {}).get("timeZone")
    if isinstance(zone, str):
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            hint = closest_hint(zone, available_timezones())
            errors.append(ManifestError("spec.window.timeZone", f"{zone} is not an IANA time zone{hint}"))
    window = spec.get("window") or {}
    if window.get("start") is not None and window.get("start") == window.get("end"):
        errors.append(ManifestError("spec.window.end", "must differ from start: a window has a length"))
    deadline = spec.get("deadline")
    if isinstance(deadline, str):
        moment = _timestamp(deadline)
        if moment is not None and moment <= now:
            errors.append(ManifestError("spec.deadline", f"{deadline} has passed"))
    split, batch = spec.get("input", {}).get("splitType", DEFAULT_SPLIT_TYPE), spec.get("maxPayloadMB")
    transforms = spec.get("maxConcurrentTransforms", DEFAULT_MAX_CONCURRENT_TRANSFORMS)
    if isinstance(batch, int) and isinstance(transforms, int) and batch * transforms > 100:
        errors.append(
            ManifestError(
                "spec.maxPayloadMB",
                f"{batch} MB x {transforms} concurrent transforms is over 100 MB (CreateTransformJob: "
                "MaxConcurrentTransforms * MaxPayloadInMB cannot exceed 100 MB)",
            )
        )
    if split == "None" and spec.get("output", {}).get("assembleWith") == "Line":
        errors.append(ManifestError("spec.output.assembleWith", "Line needs records: set input.splitType"))
    errors.extend(_records_errors(spec))
    return errors


WINDOW_BOUND_SECONDS = 24 * 3600
"""A windowed night's run ends within its window, a time of day to another: under 24 hours."""
DEADLINE_BOUND_SECONDS = 365 * 24 * 3600
"""A run with a deadline ends within its execution, and a Standard execution runs at most one year
(Step Functions quotas, "Maximum execution time")."""


def _records_errors(spec: dict[str, Any]) -> list[ManifestError]:
    """Declared records the declared rate cannot score on every instance allowed within a day (a
    window's run) or a year (a deadline's: an execution's longest): such a run would never be on
    time (at the schema's 10^12 records and a low rate, never end at all)."""
    records = (spec.get("input") or {}).get("records")
    rate = (spec.get("throughput") or {}).get("recordsPerSecond")
    instances = (spec.get("resources") or {}).get("maxInstances")
    numbers = [v for v in (records, rate, instances) if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) < 3:
        return []
    records, rate, instances = numbers
    windowed = spec.get("window") is not None
    most = instances * rate * (WINDOW_BOUND_SECONDS if windowed else DEADLINE_BOUND_SECONDS)
    if records <= most:
        return []
    bound = "within a day (its window)" if windowed else "within a year (its execution's longest)"
    return [
        ManifestError(
            "spec.input.records",
            f"{records:,} records at {rate:g}/s per instance on at most {instances} instance(s) take "
            f"{records / (instances * rate) / 3600:,.0f} h; a run must end {bound} (at most {most:,.0f} "
            "records): declare fewer records, more maxInstances or the real throughput.recordsPerSecond",
        )
    ]


def build_scoring_spec(document: dict[str, Any]) -> ScoringSpec:
    """The spec of a valid ScoringJob document (its schema and scoring_errors passed)."""
    metadata, spec = document["metadata"], document["spec"]
    model, data, output, resources = spec["model"], spec["input"], spec["output"], spec["resources"]
    window = spec.get("window")
    split = data.get("splitType", DEFAULT_SPLIT_TYPE)
    return ScoringSpec(
        team=metadata["team"],
        name=metadata["name"],
        owner=metadata.get("owner"),
        model=ScoringModel(model.get("name"), model.get("image"), model.get("artifact"), model.get("roleArn")),
        input_s3_uri=data["s3Uri"],
        content_type=data["contentType"],
        split_type=split,
        compression=data.get("compression"),
        records=data.get("records"),
        output_s3_uri=output["s3Uri"],
        accept=output.get("accept"),
        assemble_with=output.get("assembleWith", "Line" if split == "Line" else None),
        window=ScoringWindow(_time(window["start"]), _time(window["end"]), window["timeZone"]) if window else None,
        deadline=_timestamp(spec["deadline"]) if spec.get("deadline") else None,
        instance_type=resources["instanceType"],
        max_instances=int(resources["maxInstances"]),
        records_per_second=float(spec["throughput"]["recordsPerSecond"]) if spec.get("throughput") else None,
        headroom_percent=int(spec.get("headroom", DEFAULT_HEADROOM_PERCENT)),
        max_concurrent_transforms=int(spec.get("maxConcurrentTransforms", DEFAULT_MAX_CONCURRENT_TRANSFORMS)),
        max_payload_mb=spec.get("maxPayloadMB"),
        environment=tuple(sorted((str(k), str(v)) for k, v in (spec.get("environment") or {}).items())),
        depends_on=tuple(d["dataset"] for d in spec.get("dependsOn") or []),
        labels=tuple(sorted((metadata.get("labels") or {}).items())),
    )


def _time(text: str) -> time:
    hours, minutes = text.split(":")
    return time(int(hours), int(minutes))


def _timestamp(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo else None
