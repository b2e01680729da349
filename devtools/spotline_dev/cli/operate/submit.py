"""`spotline submit`: validate a manifest as the stack will (the team's entry in its registry,
where the caller may read it), upload it to `manifests/<team>/`, name the execution it starts, and optionally
follow the run to its end.

The execution's name is known before it exists: Intake names it after the bucket, key and
S3 version (`core.common.naming.execution_name`), so the upload's VersionId is all it takes. A scoring
manifest (`kind: ScoringJob`) starts its run on the stack's scoring state machine under the same
name; one with `dependsOn` is only registered: each night's Dataset Ready event starts a run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from spotline.aws.teams.team_registry import record_of
from spotline.core.common import links
from spotline.core.common.errors import ManifestError
from spotline.core.common.naming import MANIFEST_PREFIX, MANIFEST_SUFFIXES, ManifestLocation, execution_name
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_policy import allowance_errors
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline_dev.cli.manifest_checks import manifest_problems
from spotline_dev.cli.operate.deployment import SURROUNDINGS, Deployment, OperateError
from spotline_dev.cli.operate.runs import Run, describe_run, wait_for_start

WAIT_INTERVAL_SECONDS = 15.0


@dataclass(frozen=True)
class Submission:
    bucket: str
    key: str
    version_id: str | None
    execution_name: str | None  # None: a scoring job registered for its datasets (no run yet)
    execution_arn: str | None
    console: str | None
    team_policy_checked: bool
    kind: str = "TrainingJob"
    datasets: tuple[str, ...] = ()  # a registered scoring job's: each one's Dataset Ready event starts a night

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "key": self.key,
            "versionId": self.version_id,
            "executionName": self.execution_name,
            "executionArn": self.execution_arn,
            "console": self.console,
            "teamPolicyChecked": self.team_policy_checked,
            "kind": self.kind,
            "datasets": list(self.datasets),
        }


class ManifestRejected(Exception):
    """The manifest would be refused: every error, each naming its field."""

    def __init__(self, errors: list[ManifestError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors


def manifest_key(spec: JobSpec | ScoringSpec, file_name: str | None, data: bytes) -> str:
    """`manifests/<team>/<file name>`; from standard input, `<metadata.name>.yaml` (or .json)."""
    if file_name is None:
        suffix = ".json" if data.lstrip().startswith(b"{") else ".yaml"
        file_name = f"{spec.name}{suffix}"
    if not file_name.lower().endswith(MANIFEST_SUFFIXES):
        raise OperateError(
            f"{file_name}: a manifest's file name ends in {', '.join(MANIFEST_SUFFIXES)} (Intake ignores others)",
            usage=True,
        )
    return f"{MANIFEST_PREFIX}{spec.team}/{PurePosixPath(file_name).name}"


def team_policy_of(deployment: Deployment, team: str) -> TeamPolicy | None:
    """The team's entry in the stack's registry, as ValidateResources will read it (None when it
    cannot be read here: the caller may not read the registry; the stack checks it anyway)."""
    try:
        record = record_of(team, fresh=True, bucket_name=deployment.registry_bucket)
        allowance = None if record is None else record.allowance()
    except TeamPolicyInvalid:
        return None  # an entry changed by hand: ValidateResources reports it on every run
    except (ClientError, BotoCoreError):
        return None
    return TeamPolicy({} if allowance is None else {team: allowance})


def submit(deployment: Deployment, data: bytes, *, file_name: str | None, now: datetime) -> Submission:
    """Validate, then upload; raises ManifestRejected (nothing uploaded) or OperateError."""
    spec, errors = manifest_problems(data, now=now)
    policy = team_policy_of(deployment, spec.team) if spec is not None and not errors else None
    if isinstance(spec, ScoringSpec) and policy is not None:
        errors = allowance_errors(spec, policy.allowance(spec.team))
    elif isinstance(spec, JobSpec) and policy is not None:
        errors = policy.check(spec)
    if errors or spec is None:
        raise ManifestRejected(errors)
    scoring = isinstance(spec, ScoringSpec)
    if scoring and not deployment.scoring_machine_arn:
        raise OperateError(f"stack {deployment.stack} runs no scoring jobs (no ScoringRunArn output): update it first")
    key = manifest_key(spec, file_name, data)
    content_type = "application/json" if key.lower().endswith(".json") else "application/yaml"
    put = deployment.client("s3").put_object(Bucket=deployment.bucket, Key=key, Body=data, ContentType=content_type)
    version = put.get("VersionId")
    datasets = tuple(spec.depends_on) if isinstance(spec, ScoringSpec) else ()
    name = None if datasets else execution_name(ManifestLocation(deployment.bucket, key, version, spec.team))
    arn = deployment.execution_arn(name, deployment.scoring_machine_arn if scoring else None) if name else None
    return Submission(
        bucket=deployment.bucket,
        key=key,
        version_id=version,
        execution_name=name,
        execution_arn=arn,
        console=links.execution(deployment.region, arn) if arn else None,
        team_policy_checked=policy is not None,
        kind="ScoringJob" if scoring else "TrainingJob",
        datasets=datasets,
    )


def follow(deployment: Deployment, name: str, on_change: Callable[[Run], None]) -> Run:
    """Poll the run until its execution (and the ones it continues in) has ended; `on_change`
    sees the run each time its state, capacity or attempt count changes."""
    wait_for_start(deployment, name, interval=WAIT_INTERVAL_SECONDS)
    last = None
    while True:
        run = describe_run(deployment, name, SURROUNDINGS.now())
        seen = (run.name, run.state, run.capacity, run.attempts)
        if seen != last:
            on_change(run)
            last = seen
        if run.status != "RUNNING":
            return run
        SURROUNDINGS.pause(WAIT_INTERVAL_SECONDS)


def succeeded(run: Run) -> bool:
    return run.status == "SUCCEEDED"
