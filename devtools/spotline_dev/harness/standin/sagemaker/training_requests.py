"""CreateTrainingJob's checks on the payload Batch hands to SageMaker: botocore's model, then the
rules the model cannot express, each citing where AWS states it."""

from __future__ import annotations

import json
import re
from typing import Any

from botocore.validate import ParamValidator

from spotline_dev.harness.standin.base.http_answers import ApiError, request_problems, shape
from spotline_dev.harness.standin.base.training_plans import TrainingPlans

DEFAULT_MAX_RUNTIME_S = 86_400  # MaxRuntimeInSeconds: "The default value is 1 day."
MAX_RUNTIME_LIMIT_S = 28 * 86_400  # StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days."
MAX_WARM_POOL_S = 3600  # the warm pools guide's limit on KeepAlivePeriodInSeconds

TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def validated_payload(payload: str, plans: TrainingPlans, now: float) -> dict[str, Any]:
    """What SageMaker's CreateTrainingJob would reject: botocore's model (what botocore's client
    checks, then what request_problems checks), then the rules the model cannot express."""
    try:
        request = json.loads(payload)
    except json.JSONDecodeError as error:
        # AWS: batch SubmitServiceJob.serviceRequestPayload: "The request, in JSON, for the service that the
        # SubmitServiceJob operation is queueing."
        raise reject(f"serviceRequestPayload is not valid JSON: {error}") from error
    if not isinstance(request, dict):
        # AWS: batch SubmitServiceJob.serviceRequestPayload: "The request, in JSON, for the service"
        # Stand-in: a CreateTrainingJob request is a JSON object; any other JSON value cannot be one.
        raise reject("serviceRequestPayload must be a JSON object (a CreateTrainingJob request)")
    model = shape("sagemaker", "CreateTrainingJob", "input")
    report = ParamValidator().validate(request, model)
    if report.has_errors():
        lines = report.generate_report().splitlines()
        # Stand-in: the payload is a string inside SubmitServiceJob's request, so botocore's client never
        # validates it; SageMaker validates CreateTrainingJob's input against the same model (required
        # members, types, minimums), and these are botocore's own messages for it.
        raise reject("; ".join(line.strip() for line in lines[1:] or lines))
    refused = request_problems(request, model)
    if refused:
        # Stand-in: the model's other constraints (enum values, maximum lengths and sizes, patterns,
        # ranges: the API reference's "Valid Values", "Length Constraints", "Pattern", "Valid Range"),
        # which stand_in.py checks on every HTTP request and SageMaker checks on this one.
        raise reject("; ".join(refused[:5]))
    name = request["TrainingJobName"]
    # Stand-in: the API reference gives TrainingJobName's pattern anchored (^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62});
    # request_problems searches the model's unanchored pattern, which any name with one letter passes.
    if not TRAINING_JOB_NAME.match(name):
        raise reject(
            f"1 validation error detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
            "Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
        )
    serverless = "ServerlessJobConfig" in request
    algorithm = request.get("AlgorithmSpecification") or {}
    # AWS: sagemaker AlgorithmSpecification.TrainingImage: "You must specify either the algorithm name to the
    # AlgorithmName parameter or the image URI of the algorithm container to the TrainingImage parameter."
    # Stand-in: the model leaves AlgorithmSpecification optional only for serverless training jobs
    # (ServerlessJobConfig), where SageMaker picks the training configuration.
    if not serverless and not (algorithm.get("TrainingImage") or algorithm.get("AlgorithmName")):
        raise reject("AlgorithmSpecification: TrainingImage or AlgorithmName is required")
    resources = request.get("ResourceConfig") or {}
    # Stand-in: the model leaves ResourceConfig optional for serverless training jobs ("SageMaker
    # automatically selects the volume size for serverless training jobs"); a job on ML instances (the
    # only kind a Batch service environment runs) says which ones, and Batch counts its capacity by them.
    if not serverless and "ResourceConfig" not in request:
        raise reject("ResourceConfig is required for a training job on ML instances")
    # AWS: sagemaker ResourceConfig.SelectedInstanceType: "This field is read-only and isn't accepted in
    # CreateTrainingJob requests."
    if "SelectedInstanceType" in resources or "SelectedInstanceCount" in resources:
        raise reject("ResourceConfig.SelectedInstanceType and SelectedInstanceCount are read-only")
    spot = bool(request.get("EnableManagedSpotTraining"))
    exclusive = [k for k in ("InstanceType", "InstanceGroups", "InstancePlacementConfig") if k in resources]
    clash = ", ".join(exclusive + (["EnableManagedSpotTraining"] if spot else []))
    # AWS: sagemaker ResourceConfig.InstancePreferences: "InstancePreferences is mutually exclusive with
    # InstanceType ... InstanceGroups ... InstancePlacementConfig ... and EnableManagedSpotTraining"
    if "InstancePreferences" in resources and clash:
        raise reject(f"ResourceConfig.InstancePreferences is mutually exclusive with {clash}")
    if "InstancePreferences" in resources:
        _check_preferences(resources)
    plan_arn = resources.get("TrainingPlanArn")
    if plan_arn and (plan_refused := plans.refusal(plan_arn, str(resources.get("InstanceType")), now)):
        # AWS guide: SageMaker Developer Guide, "Training plans utilization for SageMaker training jobs": "The
        # training plan must be in the Scheduled or Active status to be used by a training job."
        # AWS: sagemaker InstancePreference.TrainingPlanArns: "The plan's instance type must match InstanceType"
        raise reject(plan_refused)
    stopping = request.get("StoppingCondition") or {}
    max_runtime = stopping.get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S)
    max_wait = stopping.get("MaxWaitTimeInSeconds")
    # AWS: sagemaker StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days."
    if max_runtime > MAX_RUNTIME_LIMIT_S:
        raise reject(f"StoppingCondition.MaxRuntimeInSeconds must be at most {MAX_RUNTIME_LIMIT_S} (28 days)")
    # AWS: sagemaker StoppingCondition.MaxWaitTimeInSeconds: "The maximum length of time, in seconds, that a
    # managed Spot training job has to complete."
    # Stand-in: SageMaker's message for it, as users report it (github.com/Kenza-AI/sagify/issues/111).
    if max_wait is not None and not spot:
        raise reject("Invalid MaxWaitTimeInSeconds. It is only supported when EnableManagedSpotTraining is set to true")
    # AWS guide: SageMaker Developer Guide (Managed Spot Training), "Using Managed Spot Training":
    # "Set EnableManagedSpotTraining to True and specify the MaxWaitTimeInSeconds."
    if spot and max_wait is None:
        raise reject("StoppingCondition.MaxWaitTimeInSeconds is required when EnableManagedSpotTraining is true")
    # AWS: sagemaker StoppingCondition.MaxWaitTimeInSeconds: "It must be equal to or greater than
    # MaxRuntimeInSeconds"
    if max_wait is not None and max_wait < max_runtime:
        raise reject(
            "Invalid MaxWaitTimeInSeconds. It must be greater than or equal to MaxRuntimeInSeconds",
        )
    keep_alive = resources.get("KeepAlivePeriodInSeconds")
    # AWS guide: SageMaker Developer Guide (SageMaker AI Managed Warm Pools), "Considerations": "SageMaker
    # Managed Warm Pools cannot be used with spot instances."
    if keep_alive and spot:
        raise reject("ResourceConfig.KeepAlivePeriodInSeconds (warm pools) cannot be used with spot instances")
    # AWS guide: SageMaker Developer Guide (SageMaker AI Managed Warm Pools), "Warm pool lifecycle":
    # "The maximum length of time allowed for the KeepAlivePeriodInSeconds is 3600 seconds (60 minutes)."
    if keep_alive is not None and keep_alive > MAX_WARM_POOL_S:
        raise reject(f"ResourceConfig.KeepAlivePeriodInSeconds must be at most {MAX_WARM_POOL_S}")
    return request


def _check_preferences(resources: dict[str, Any]) -> None:
    preferences = resources["InstancePreferences"]
    types = [p.get("InstanceType") for p in preferences]
    # AWS: sagemaker InstancePreference.InstanceType: "An instance type can appear only once in an
    # InstancePreferences list."
    if len(set(types)) != len(types):
        raise reject("ResourceConfig.InstancePreferences: an instance type can appear only once")
    counted = sum(1 for p in preferences if "InstanceCount" in p)
    # AWS: sagemaker InstancePreference.InstanceCount: "SageMaker rejects requests that set InstanceCount on only
    # some preferences, that set it both per preference and in ResourceConfig ... or that omit it in both places."
    if counted not in (0, len(preferences)) or (counted == 0) == ("InstanceCount" not in resources):
        raise reject(
            "ResourceConfig.InstancePreferences: set InstanceCount on every preference or only in ResourceConfig"
        )
    # AWS: sagemaker InstancePreference.TrainingPlanArns: "Per-preference TrainingPlanArns is mutually exclusive
    # with the job-level TrainingPlanArn in ResourceConfig"
    if "TrainingPlanArn" in resources and any("TrainingPlanArns" in p for p in preferences):
        raise reject("ResourceConfig: TrainingPlanArn and per-preference TrainingPlanArns are mutually exclusive")


def reject(message: str) -> ApiError:
    """CreateTrainingJob's refusal of the payload (SageMaker answers ValidationException)."""
    return ApiError("ValidationException", message)
