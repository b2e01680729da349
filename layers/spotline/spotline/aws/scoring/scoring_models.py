"""The SageMaker model a scoring job scores with: an existing one, described, or one Spotline
registers from the manifest's image, artifact and role (CreateModel), checked first as
ValidateResources checks a training job's (the role exists, trusts SageMaker and is the team's;
the image is in ECR; the artifact is there).

A registered model is named after its content (`core.scoring.scoring.registered_model_name`) and kept:
a model costs nothing, the next night with the same artifact reuses it, and a run that is still
scoring with it is never left without it. A name already taken by a model of other content is
refused, never overwritten.
"""

from __future__ import annotations

import os

from spotline.aws.common.clients import client, error_code, split_s3_uri
from spotline.aws.teams.sagemaker_tags import sagemaker_tags
from spotline.aws.training.resources import check_image, check_role
from spotline.core.common.errors import ManifestError
from spotline.core.scoring.scoring import ScoringSpec, registered_model_name
from spotline.core.scoring.scoring_policy import ModelFacts

ROLE_PATTERN = "TRAINING_ROLE_ARN_PATTERN"
TEAM_TAG = "spotline:team"


def model_facts(name: str) -> ModelFacts | None:
    """DescribeModel's role, image and artifact of `name`; None when there is no such model."""
    try:
        described = client("sagemaker").describe_model(ModelName=name)
    except Exception as exc:
        if error_code(exc) in ("ValidationException", "ResourceNotFound"):
            return None
        raise
    container = described.get("PrimaryContainer") or (described.get("Containers") or [{}])[0]
    return ModelFacts(name, str(described["ExecutionRoleArn"]), container.get("Image"), container.get("ModelDataUrl"))


def named_model_problems(spec: ScoringSpec) -> list[ManifestError]:
    """A named model is the team's as its roles are: tagged `spotline:team=<team>` (as Spotline
    tags the models it registers), and run under a role tagged so too (the check training and a
    model from parts get), so a broad role pattern cannot lend another team's model. The model's
    tags come from ListTags ("Returns the tags for the specified SageMaker resource", SageMaker API
    reference); DescribeModel has none."""
    name, path = str(spec.model.name), "spec.model.name"
    described = client("sagemaker").describe_model(ModelName=name)
    owner = sagemaker_tags(described["ModelArn"]).get(TEAM_TAG)
    if owner != spec.team:
        found = f"it is {owner}'s" if owner else "it has no such tag"
        return [
            ManifestError(
                path,
                f"model {name} is not tagged {TEAM_TAG}={spec.team} ({found}): a team scores only with its own models",
            )
        ]
    return check_role(str(described["ExecutionRoleArn"]), os.environ[ROLE_PATTERN], spec.team, path=path)


def model_parts_problems(spec: ScoringSpec) -> list[ManifestError]:
    """The image, artifact and role of a model to register, as they are in the account."""
    model = spec.model
    problems = check_role(str(model.role_arn), os.environ[ROLE_PATTERN], spec.team, path="spec.model.roleArn")
    problems += check_image(str(model.image), path="spec.model.image")
    bucket, key = split_s3_uri(str(model.artifact))
    try:
        client("s3").head_object(Bucket=bucket, Key=key)
    except Exception as exc:
        code = error_code(exc)
        if code not in ("404", "NoSuchKey", "NotFound", "NoSuchBucket", "403", "AccessDenied"):
            raise
        denied = "S3 denied reading it (this stack reads the team buckets of TrainingDataBucketPattern only)"
        why = {"NoSuchBucket": f"bucket {bucket} does not exist", "403": denied, "AccessDenied": denied}.get(
            code, "no object there (a training job's model.tar.gz?)"
        )
        problems.append(ManifestError("spec.model.artifact", f"{model.artifact}: {why}"))
    return problems


def register_model(spec: ScoringSpec) -> str | ManifestError:
    """The registered model's name (created now, or found with the same content), or why not."""
    model, name = spec.model, registered_model_name(spec.team, spec.model)
    wanted = ModelFacts(name, str(model.role_arn), str(model.image), str(model.artifact))
    try:
        client("sagemaker").create_model(
            ModelName=name,
            PrimaryContainer={"Image": wanted.image, "ModelDataUrl": wanted.artifact},
            ExecutionRoleArn=wanted.role_arn,
            Tags=[{"Key": TEAM_TAG, "Value": spec.team}, {"Key": "spotline:job", "Value": spec.name}],
        )
        return name
    except Exception as exc:
        if error_code(exc) != "ValidationException" or "already exist" not in str(exc):
            raise
    found = model_facts(name)
    if found != wanted:
        return ManifestError(
            "spec.model",
            f"a SageMaker model named {name} exists with another image, artifact or role: delete it, or name a model",
        )
    return name
