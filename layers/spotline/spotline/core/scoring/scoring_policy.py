"""What a team may score with (pure): its registry entry's allowance applied to a scoring job
and the model it names. A team scores only with a model whose role and image are its own, on an
instance family it may use, within its instance limit, reading and writing under its prefixes: a
model is an account-wide name, so its role and image say whose it is."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from spotline.core.common.errors import ManifestError
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.spec.catalog import family_of
from spotline.core.teams.team_policy import TeamAllowance, some_of, within_prefix


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """A SageMaker model as DescribeModel gives it: the role it runs under and its image."""

    name: str
    role_arn: str
    image: str | None
    artifact: str | None = None  # the container's ModelDataUrl


def scoring_team_errors(
    spec: ScoringSpec, allowance: TeamAllowance | None, model: ModelFacts | None
) -> list[ManifestError]:
    """The allowance's refusals, then the model's (DescribeModel's facts; None: no such model)."""
    if allowance is None:
        return allowance_errors(spec, allowance)
    return allowance_errors(spec, allowance) + model_errors(spec, allowance, model)


def allowance_errors(spec: ScoringSpec, allowance: TeamAllowance | None) -> list[ManifestError]:
    """What the team's entry refuses of the job itself (family, instances, prefixes): checkable
    without the account, as `spotline validate --team-policy` and `submit` do."""
    team = spec.team
    if allowance is None:
        return [ManifestError("metadata.team", f"{team} is not in this stack's team registry")]
    errors = []
    family = family_of(spec.instance_type)
    if family not in allowance.instance_families:
        allowed = some_of(tuple(sorted(allowance.instance_families)))
        errors.append(
            ManifestError("spec.resources.instanceType", f"team {team} may not use the {family} family ({allowed})")
        )
    if spec.max_instances > allowance.max_instances:
        errors.append(
            ManifestError(
                "spec.resources.maxInstances",
                f"{spec.max_instances} is more than team {team} may use at once ({allowance.max_instances})",
            )
        )
    for path, uri in (("spec.input.s3Uri", spec.input_s3_uri), ("spec.output.s3Uri", spec.output_s3_uri)):
        if not any(within_prefix(uri, prefix) for prefix in allowance.s3_prefixes):
            errors.append(
                ManifestError(path, f"{uri} is outside team {team}'s prefixes ({some_of(allowance.s3_prefixes)})")
            )
    return errors


def model_errors(spec: ScoringSpec, allowance: TeamAllowance, model: ModelFacts | None) -> list[ManifestError]:
    """Whether the model is the team's: its role one the team may pass, its image one it may use
    (a model to register from image + artifact: those, and its artifact under the team's prefixes)."""
    team, name = spec.team, spec.model.name
    if name is None:
        return _parts_errors(spec, allowance)
    errors = []
    if model is None:
        errors.append(ManifestError("spec.model.name", f"no SageMaker model named {name} in this region"))
        return errors
    if not any(fnmatch.fnmatchcase(model.role_arn, pattern) for pattern in allowance.roles):
        errors.append(
            ManifestError(
                "spec.model.name",
                f"{name} runs under {model.role_arn}, not a role team {team} may pass ({some_of(allowance.roles)})",
            )
        )
    if model.image and not any(fnmatch.fnmatchcase(model.image, pattern) for pattern in allowance.images):
        errors.append(
            ManifestError(
                "spec.model.name",
                f"{name} serves {model.image}, not an image team {team} may use ({some_of(allowance.images)})",
            )
        )
    return errors


def _parts_errors(spec: ScoringSpec, allowance: TeamAllowance) -> list[ManifestError]:
    team, model, errors = spec.team, spec.model, []
    role, image, artifact = str(model.role_arn), str(model.image), str(model.artifact)
    if not any(fnmatch.fnmatchcase(role, pattern) for pattern in allowance.roles):
        errors.append(
            ManifestError(
                "spec.model.roleArn", f"{role} is not a role team {team} may pass ({some_of(allowance.roles)})"
            )
        )
    if not any(fnmatch.fnmatchcase(image, pattern) for pattern in allowance.images):
        errors.append(
            ManifestError(
                "spec.model.image", f"{image} is not an image team {team} may use ({some_of(allowance.images)})"
            )
        )
    if not any(within_prefix(artifact, prefix) for prefix in allowance.s3_prefixes):
        errors.append(
            ManifestError(
                "spec.model.artifact",
                f"{artifact} is outside team {team}'s prefixes ({some_of(allowance.s3_prefixes)})",
            )
        )
    return errors
