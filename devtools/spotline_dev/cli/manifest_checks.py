"""What `spotline validate` and `spotline submit` check in a manifest, as the stack would."""

from __future__ import annotations

from datetime import datetime

from spotline.core.common.errors import ManifestError
from spotline.core.manifest.advice import warnings_of
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_policy import allowance_errors
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy


def manifest_problems(
    data: bytes, *, now: datetime, expected_team: str | None = None, policy: TeamPolicy | None = None
) -> tuple[JobSpec | ScoringSpec | None, list[ManifestError]]:
    """The spec (a training or a scoring job) and what is wrong with it: the spotline/v1 contract,
    then the team policy (its roles, S3 prefixes, images, families and limits, as ValidateResources
    and PlanScoringRun apply them; a scoring job's model is the account's, checked by the stack)."""
    result = validate_bytes(data, now=now, expected_team=expected_team)
    if result.scoring is not None:
        return result.scoring, (
            [] if policy is None else allowance_errors(result.scoring, policy.allowance(result.scoring.team))
        )
    if result.spec is None or policy is None:
        return result.spec, result.errors
    return result.spec, policy.check(result.spec)


def manifest_warnings(spec: JobSpec | ScoringSpec | None, *, now: datetime) -> list[ManifestError]:
    """What a valid training manifest may still get wrong (`spotline.core.manifest.advice`): said, never refused."""
    return warnings_of(spec, now) if isinstance(spec, JobSpec) else []
