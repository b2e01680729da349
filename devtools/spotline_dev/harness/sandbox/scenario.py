"""Sandbox scenarios (docs/getting-started.md, "Scenarios"): the file format, read strictly. Its shape is
`schemas/scenario-v1.schema.json`, checked first with the manifests' field errors, so a typo is
an error naming the field, never a silently ignored setting; the rules here are the ones a
schema cannot express (a gap's end after its start, files that exist, functions the template has)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore.session
import yaml

from spotline.core.common import json_schemas
from spotline.core.common.durations import parse_duration
from spotline.core.manifest.loader import ManifestLoadError, parse_manifest
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline_dev.harness.local.template import PROJECT_ROOT, load_template, resources_of_type
from spotline_dev.harness.sandbox.team_changes import TeamChangeInvalid, TeamChangeSpec, parse_team_changes

DEFAULT_SCENARIO = PROJECT_ROOT / "examples" / "scenarios" / "default.yaml"
SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "scenario-v1.schema.json"
MAX_ERRORS = 20
PLAN_INSTANCE_TYPES: tuple[str, ...] = tuple(
    botocore.session.get_session().get_service_model("sagemaker").shape_for("ReservedCapacityInstanceType").enum  # type: ignore[attr-defined]
)
"""The instance types training plans reserve (botocore's model; g5 and the like are not offered)."""
SAMPLE_MANIFESTS = PROJECT_ROOT / "examples" / "manifests"


class ScenarioError(ValueError):
    """A scenario file that cannot be run, with the field at fault."""


@dataclass(frozen=True)
class FaultSpec:
    """`count` invocations of the function (template logical id) from `start` (seconds after the
    scenario's start) raise an unexpected error."""

    function: str  # logical id, e.g. CheckTrainingStatusFunction
    start: float
    count: int


@dataclass(frozen=True)
class Submission:
    """`count` uploads of the manifest, the first `at` seconds after the scenario's start, then one
    every `every` seconds: each a new object version, so a new execution. With `deadline_after`,
    each upload's deadline is that long after the upload (a recurring job's deadline moves on)."""

    manifest: Path
    at: float = 0.0
    every: float | None = None
    count: int = 1
    deadline_after: float | None = None

    def moments(self) -> list[float]:
        return [self.at + index * (self.every or 0.0) for index in range(self.count)]


@dataclass(frozen=True)
class Capacity:
    """Spot and on-demand capacity of one instance type (or the default for every type); times
    are offsets from the scenario's start, in seconds."""

    spot_start_delay: float = 300.0
    interruptions: list[float] = field(default_factory=list)
    capacity_gaps: list[tuple[float, float]] = field(default_factory=list)  # spot
    on_demand_start_delay: float = 480.0
    on_demand_gaps: list[tuple[float, float]] = field(default_factory=list)
    speed: float = 1.0  # how fast the training code really runs on the type


@dataclass(frozen=True)
class PlanSpec:
    """A training plan the account has bought: `instances` of `instance_type`, from `start` to `end`
    (offsets from the scenario's start, seconds)."""

    name: str
    instance_type: str
    instances: int
    start: float
    end: float
    tags: dict[str, str] = field(default_factory=dict)  # as given at CreateTrainingPlan: spotline:team=<team>
    zone: str | None = None  # its reserved capacity's Availability Zone (None: zone a of the region)


@dataclass(frozen=True)
class RegionSpec:
    """A peer region of the stack (`regions:`): its capacity and the replicas it lacks."""

    capacity: Capacity
    instance_types: dict[str, Capacity] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # manifest fields whose replica is not there


@dataclass(frozen=True)
class TransformSpec:
    """The stand-in's Batch Transform (`transform:`), for scoring manifests."""

    records_per_second: float
    changes: list[tuple[float, float]] = field(default_factory=list)  # (offset seconds, factor)
    objects: int = 400
    start_delay: float = 480.0
    instance_quota: int | None = None  # the account's transform quota for the manifest's type; None: the stand-in's


@dataclass(frozen=True)
class Scenario:
    name: str
    start: datetime
    manifests: list[Path]
    spot_start_delay: float = 300.0
    interruptions: list[float] = field(default_factory=list)
    capacity_gaps: list[tuple[float, float]] = field(default_factory=list)  # offsets from start, seconds
    on_demand_start_delay: float = 480.0
    duration: float | None = None  # None: each manifest's expectedDuration
    fail_after: float | None = None
    hardware_faults: list[float] = field(default_factory=list)  # training times at which a GPU fails
    missing: list[str] = field(default_factory=list)  # manifest fields whose resources the account lacks
    team_policy: dict[str, Any] | None = None  # seeds the team registry; None: each team gets what it names
    team_changes: list[TeamChangeSpec] = field(default_factory=list)  # `teamChanges:`, made during the run
    stop_execution_at: float | None = None  # seconds after each execution's start: StopExecution
    faults: list[FaultSpec] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    capacity: dict[str, int] | None = None  # queue.capacity, per instance type; None: the template's default
    on_demand_gaps: list[tuple[float, float]] = field(default_factory=list)
    instance_types: dict[str, Capacity] = field(default_factory=dict)  # `instanceTypes:`, where a type differs
    training_plans: list[PlanSpec] = field(default_factory=list)  # `trainingPlans:`
    account: dict[str, str] | None = None  # `account: {id, region, rolePath}`; None: the manifests'
    regions: dict[str, RegionSpec] = field(default_factory=dict)  # `regions:`, the stack's peer regions
    zones: dict[str, Capacity] = field(default_factory=dict)  # `zones:`, where a zone of the home region differs
    transform: TransformSpec | None = None  # `transform:`, the stand-in's Batch Transform
    prices: dict[tuple[str, str], float] = field(default_factory=dict)  # `prices:`, (region, type) -> USD/h

    @property
    def shares_a_queue(self) -> bool:
        """A fleet scenario: every upload goes to one stack, its executions sharing one queue and
        one clock. Otherwise each manifest runs alone in a fresh stack."""
        return bool(self.submissions) or self.capacity is not None


def _seconds(raw: Any, where: str) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    try:
        return float(parse_duration(str(raw)))
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def template_functions() -> dict[str, str]:
    """The template's functions by the name a scenario uses: the logical id without its
    `Function` suffix (CheckTrainingStatus for CheckTrainingStatusFunction)."""
    logical_ids = resources_of_type(load_template(), "AWS::Serverless::Function")
    return {logical.removesuffix("Function") or logical: logical for logical in logical_ids}


def load_scenario(path: Path | None) -> Scenario:
    """Read a scenario file (see docs/getting-started.md, "Scenarios"); None gives the default scenario."""
    path = path or DEFAULT_SCENARIO
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: a scenario is a mapping of fields")
    if errors := json_schemas.errors_against(json.loads(SCHEMA.read_text()), raw, root="(scenario)"):
        listed = [f"{e.path}: {e.message}" for e in errors[:MAX_ERRORS]]
        more = [f"... and {len(errors) - MAX_ERRORS} more"] if len(errors) > MAX_ERRORS else []
        raise ScenarioError(f"{path}: not a valid scenario (scenario-v1.schema.json):\n  " + "\n  ".join(listed + more))
    spot, on_demand, training = raw.get("spot") or {}, raw.get("onDemand") or {}, raw.get("training") or {}
    start_raw = raw.get("start")
    try:
        start = (
            datetime.fromisoformat(str(start_raw).upper()) if start_raw else datetime.now(UTC).replace(microsecond=0)
        )
    except ValueError:
        raise ScenarioError(f"start: {start_raw!r} is not an RFC 3339 timestamp") from None
    if start.tzinfo is None:
        raise ScenarioError("start: needs an offset such as Z")
    submissions = _submissions(raw["submissions"], path.parent) if "submissions" in raw else []
    manifests = (
        [(path.parent / m).resolve() for m in raw["manifests"]]
        if raw.get("manifests")
        else ([] if submissions else sorted(SAMPLE_MANIFESTS.glob("*.yaml")))
    )
    for manifest in manifests:
        if not manifest.is_file():
            raise ScenarioError(f"manifests: {manifest} does not exist")
        if "queue" in raw:
            _readable(manifest, "manifests")
    default = _capacity(spot, on_demand, "", Capacity())
    return Scenario(
        name=str(raw.get("name") or path.stem),
        start=start.astimezone(UTC),
        manifests=manifests,
        spot_start_delay=default.spot_start_delay,
        interruptions=default.interruptions,
        capacity_gaps=default.capacity_gaps,
        on_demand_start_delay=default.on_demand_start_delay,
        on_demand_gaps=default.on_demand_gaps,
        instance_types={
            str(name): replace(
                _capacity(entry.get("spot") or {}, entry.get("onDemand") or {}, f"instanceTypes.{name}.", default),
                speed=float(entry.get("speed", 1.0)),
            )
            for name, entry in (raw.get("instanceTypes") or {}).items()
        },
        training_plans=_plans(raw.get("trainingPlans") or []),
        regions={
            str(name): _region(entry or {}, str(name), default) for name, entry in (raw.get("regions") or {}).items()
        },
        zones={
            str(zone): _capacity(
                (e or {}).get("spot") or {}, (e or {}).get("onDemand") or {}, f"zones.{zone}.", default
            )
            for zone, e in (raw.get("zones") or {}).items()
        },
        transform=_transform(raw["transform"]) if raw.get("transform") else None,
        prices={
            (str(region), str(kind)): float(usd)
            for region, types in (raw.get("prices") or {}).items()
            for kind, usd in types.items()
        },
        duration=_seconds(training["duration"], "training.duration") if "duration" in training else None,
        fail_after=_seconds(training["failAfter"], "training.failAfter") if "failAfter" in training else None,
        hardware_faults=sorted(_seconds(v, "training.hardwareFaults") for v in training.get("hardwareFaults") or []),
        missing=[str(m) for m in raw.get("missing") or []],
        team_policy=_team_policy(raw["teamPolicy"], path.parent) if "teamPolicy" in raw else None,
        team_changes=_team_changes(raw.get("teamChanges") or [], path.parent),
        stop_execution_at=_stop_execution_at(raw["stopExecutionAt"]) if "stopExecutionAt" in raw else None,
        faults=_faults(raw["faults"]) if "faults" in raw else [],
        submissions=submissions,
        capacity=_queue(raw["queue"]) if "queue" in raw else None,
        account={str(k): str(v) for k, v in raw["account"].items()} if raw.get("account") else None,
    )


def _transform(raw: dict[str, Any]) -> TransformSpec:
    return TransformSpec(
        records_per_second=float(raw["recordsPerSecond"]),
        changes=[
            (_seconds(c["at"], f"transform.changes[{i}].at"), float(c["factor"]))
            for i, c in enumerate(raw.get("changes") or [])
        ],
        objects=int(raw.get("objects", 400)),
        start_delay=_seconds(raw["startDelay"], "transform.startDelay") if "startDelay" in raw else 480.0,
        instance_quota=int(raw["instanceQuota"]) if "instanceQuota" in raw else None,
    )


def _region(raw: dict[str, Any], name: str, default: Capacity) -> RegionSpec:
    where = f"regions.{name}."
    capacity = _capacity(raw.get("spot") or {}, raw.get("onDemand") or {}, where, default)
    return RegionSpec(
        capacity=capacity,
        instance_types={
            str(kind): replace(
                _capacity(e.get("spot") or {}, e.get("onDemand") or {}, f"{where}instanceTypes.{kind}.", capacity),
                speed=float(e.get("speed", 1.0)),
            )
            for kind, e in (raw.get("instanceTypes") or {}).items()
        },
        missing=[str(m) for m in raw.get("missing") or []],
    )


def _capacity(spot: dict[str, Any], on_demand: dict[str, Any], where: str, default: Capacity) -> Capacity:
    """`spot:` and `onDemand:` (top level, or of one type under `instanceTypes:`); what a type leaves
    out comes from `default`."""
    return Capacity(
        spot_start_delay=_seconds(spot["startDelay"], f"{where}spot.startDelay")
        if "startDelay" in spot
        else default.spot_start_delay,
        interruptions=sorted(_seconds(v, f"{where}spot.interruptions") for v in spot["interruptions"])
        if "interruptions" in spot
        else default.interruptions,
        capacity_gaps=_gaps(spot["capacityGaps"], f"{where}spot.capacityGaps")
        if "capacityGaps" in spot
        else default.capacity_gaps,
        on_demand_start_delay=_seconds(on_demand["startDelay"], f"{where}onDemand.startDelay")
        if "startDelay" in on_demand
        else default.on_demand_start_delay,
        on_demand_gaps=_gaps(on_demand["capacityGaps"], f"{where}onDemand.capacityGaps")
        if "capacityGaps" in on_demand
        else default.on_demand_gaps,
    )


def _plans(raw: list[dict[str, Any]]) -> list[PlanSpec]:
    plans: list[PlanSpec] = []
    for index, entry in enumerate(raw):
        where = f"trainingPlans[{index}]"
        begin, end = _seconds(entry["from"], f"{where}.from"), _seconds(entry["to"], f"{where}.to")
        if end <= begin:
            raise ScenarioError(f"{where}: 'to' must be after 'from'")
        if entry["name"] in {plan.name for plan in plans}:
            raise ScenarioError(f"{where}.name: {entry['name']!r} names another plan already")
        if entry["instanceType"] not in PLAN_INSTANCE_TYPES:
            raise ScenarioError(
                f"{where}.instanceType: {entry['instanceType']} is not offered as a training plan "
                f"(SageMaker's ReservedCapacityInstanceType: {', '.join(PLAN_INSTANCE_TYPES)})"
            )
        tags = {str(key): str(value) for key, value in (entry.get("tags") or {}).items()}
        kind, instances = str(entry["instanceType"]), int(entry["instances"])
        plans.append(PlanSpec(str(entry["name"]), kind, instances, begin, end, tags, entry.get("zone")))
    return plans


def _gaps(raw: Any, where: str) -> list[tuple[float, float]]:
    gaps = []
    for index, gap in enumerate(raw or []):
        at = f"{where}[{index}]"
        begin, end = _seconds(gap["from"], f"{at}.from"), _seconds(gap["to"], f"{at}.to")
        if end <= begin:
            raise ScenarioError(f"{at}: 'to' must be after 'from'")
        gaps.append((begin, end))
    return gaps


def _queue(raw: Any) -> dict[str, int]:
    """`queue: {capacity: {TYPE: N}}`: the service environment's capacity limits, per instance type."""
    return {str(unit): int(n) for unit, n in raw["capacity"].items()}


def _readable(manifest: Path, where: str) -> None:
    """A fleet re-reads its manifests as YAML (to set deadlines) before any stack validates them:
    one the loader refuses (a NUL even in a comment, bytes that are not UTF-8) is named here, with
    the loader's position, instead of crashing that read. A manifest run alone needs no check:
    its run ends in ManifestInvalid, with the same words."""
    try:
        parse_manifest(manifest.read_bytes())
    except ManifestLoadError as exc:
        raise ScenarioError(f"{where}: {manifest} cannot be read: {exc.error}") from None


def _submissions(raw: Any, folder: Path) -> list[Submission]:
    """`submissions: [{manifest: FILE, at: 2h, every: 1d, count: 7, deadlineAfter: 12h}]`, strictly."""
    submissions = []
    for index, entry in enumerate(raw):
        where = f"submissions[{index}]"
        manifest = (folder / str(entry["manifest"])).resolve()
        if not manifest.is_file():
            raise ScenarioError(f"{where}.manifest: {manifest} does not exist")
        _readable(manifest, f"{where}.manifest")
        at = _seconds(entry.get("at", 0), f"{where}.at")
        count = int(entry.get("count", 1))
        every = _seconds(entry["every"], f"{where}.every") if "every" in entry else None
        if count > 1 and not every:
            raise ScenarioError(f"{where}.every: required (a positive duration) when count is more than 1")
        if every is not None and every <= 0:
            raise ScenarioError(f"{where}.every: {entry['every']!r} must be a positive duration")
        after = _seconds(entry["deadlineAfter"], f"{where}.deadlineAfter") if "deadlineAfter" in entry else None
        if after is not None and after <= 0:
            raise ScenarioError(f"{where}.deadlineAfter: {entry['deadlineAfter']!r} must be a positive duration")
        submissions.append(Submission(manifest, at, every, count, after))
    return submissions


def _stop_execution_at(raw: Any) -> float:
    seconds = _seconds(raw, "stopExecutionAt")
    if seconds <= 0:
        raise ScenarioError(f"stopExecutionAt: {raw!r} must be a positive duration after the execution's start")
    return seconds


def _faults(raw: Any) -> list[FaultSpec]:
    """`faults: [{function: CheckTrainingStatus, from: 2h, count: 10}]`, each entry strictly."""
    functions = template_functions()
    faults = []
    for index, entry in enumerate(raw):
        where = f"faults[{index}]"
        name = entry["function"]
        if name not in functions:
            hint = (
                f"; write it without the 'Function' suffix: {name.removesuffix('Function')}"
                if isinstance(name, str) and name.removesuffix("Function") in functions
                else ""
            )
            raise ScenarioError(
                f"{where}.function: {name!r} is not a function of template.yaml{hint} "
                f"(known: {', '.join(sorted(functions))})"
            )
        begin = _seconds(entry.get("from", 0), f"{where}.from")
        count = int(entry.get("count", 1))
        faults.append(FaultSpec(functions[name], begin, count))
    return faults


def _team_changes(raw: list[dict[str, Any]], folder: Path) -> list[TeamChangeSpec]:
    try:
        return parse_team_changes(raw, folder, _seconds)
    except TeamChangeInvalid as exc:
        raise ScenarioError(str(exc)) from None


def _team_policy(raw: Any, folder: Path) -> dict[str, Any]:
    """The scenario's `teamPolicy:` (`{teams: {<team>: <entry>}}`, inline or a JSON file relative
    to the scenario): the team registry's seed, checked as the stack would."""
    if isinstance(raw, str):
        try:
            raw = json.loads((folder / raw).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ScenarioError(f"teamPolicy: cannot read {raw}: {exc}") from None
    if not isinstance(raw, dict):
        raise ScenarioError("teamPolicy: must be a mapping of the team policy's shape ({teams: {<team>: {...}}})")
    try:
        TeamPolicy.from_json(json.dumps(raw))
    except TeamPolicyInvalid as exc:
        raise ScenarioError("; ".join(f"teamPolicy.{e.path}: {e.message}" for e in exc.errors)) from None
    return raw
