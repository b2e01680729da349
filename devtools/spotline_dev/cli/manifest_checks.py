"""What `spotline validate` and `spotline submit` check in a manifest, as the stack would."""

from __future__ import annotations

from datetime import datetime

from spotline.core.common.errors import ManifestError
from spotline.core.manifest.advice import warnings_of
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.regions.regions import REGIONS_PATH, home_region_missing
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_policy import allowance_errors
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy


def manifest_problems(
    data: bytes,
    *,
    now: datetime,
    expected_team: str | None = None,
    policy: TeamPolicy | None = None,
    home_region: str | None = None,
) -> tuple[JobSpec | ScoringSpec | None, list[ManifestError]]:
    """The spec (a training or a scoring job) and what is wrong with it: the spotline/v1 contract,
    then the team policy (its roles, S3 prefixes, images, families and limits, as ValidateResources
    and PlanScoringRun apply them; a scoring job's model is the account's, checked by the stack),
    and, given the stack's region, the stack's rule that `capacity.regions` includes it."""
    result = validate_bytes(data, now=now, expected_team=expected_team)
    if result.scoring is not None:
        return result.scoring, (
            [] if policy is None else allowance_errors(result.scoring, policy.allowance(result.scoring.team))
        )
    if result.spec is None:
        return None, result.errors
    errors = result.errors if policy is None else policy.check(result.spec)
    missing = home_region_missing(result.spec.regions, home_region) if home_region else None
    return result.spec, [*errors, *([missing] if missing else [])]


def manifest_warnings(
    spec: JobSpec | ScoringSpec | None, *, now: datetime, home_region: str | None = None
) -> list[ManifestError]:
    """What a valid training manifest may still get wrong (`spotline.core.manifest.advice`): said,
    never refused; and, without the stack's region, that `capacity.regions` must include it."""
    if not isinstance(spec, JobSpec):
        return []
    unknown_home = [UNCHECKED_HOME_REGION] if spec.regions and home_region is None else []
    return [*warnings_of(spec, now), *unknown_home]


UNCHECKED_HOME_REGION = ManifestError(
    REGIONS_PATH,
    "must include the stack's own region, where the manifest is dropped (the stack refuses the run otherwise); "
    "not checked here: give --region REGION (or set AWS_REGION or AWS_DEFAULT_REGION) to check it",
)
