"""AWS Batch's size quotas on SubmitServiceJob, checked before anything is sent (pure).

AWS Batch user guide, "AWS Batch service quotas" (quotas that "can't be changed"):
"Maximum job service request payload size (for SubmitServiceJob API operations) | 10 KiB" and
"Maximum size of SubmitServiceJob request | 30 KiB". botocore's model leaves both to the service
(serviceRequestPayload is an unbounded String), so a manifest with long hyperparameters would
validate, then fail at SubmitServiceJob. Two checks hold it:

- `manifest_size_errors`, at validation (ValidateManifest, `spotline validate`): the request of
  the job's largest attempt, with room for the largest network and encryption settings a stack
  normally has (SETTINGS_ALLOWANCE), names the manifest fields that take the most bytes.
- `request_size_problems`, at submission (`spotline.aws.training.request_check`): the exact request, with
  the stack's own settings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spotline.core.common.errors import ManifestError
from spotline.core.common.naming import EXECUTION_NAME_MAX
from spotline.core.spec.model import JobSpec
from spotline.core.training.training_request import Attempt, TrainingSettings, service_job_request

MAX_PAYLOAD_BYTES = 10 * 1024
MAX_REQUEST_BYTES = 30 * 1024

SETTINGS_ALLOWANCE = TrainingSettings(
    subnet_ids=tuple(f"subnet-{i:017x}" for i in range(16)),  # SageMaker VpcConfig: at most 16 subnets
    security_group_ids=tuple(f"sg-{i:017x}" for i in range(5)),  # and 5 security groups
    network_isolation=True,
    inter_container_traffic_encryption=True,
    volume_kms_key_id="arn:aws:kms:ap-southeast-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    output_kms_key_id="arn:aws:kms:ap-southeast-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
)
"""The most a stack's settings add to a payload at validation time: every subnet and security
group SageMaker allows, in EC2's id format, and two KMS key ARNs. A stack set with longer values
(KMS aliases, say) is still held at submission by `request_size_problems`."""

_LARGEST_QUEUE = f"arn:aws:batch:ap-southeast-2:123456789012:job-queue/{'q' * 128}"
_LARGEST_ATTEMPTS = tuple(
    Attempt(
        f"arn:aws:states:ap-southeast-2:123456789012:execution:spotline-training-lifecycle:{'x' * EXECUTION_NAME_MAX}",
        99,
        capacity,
    )
    for capacity in ("spot", "on-demand")
)
"""The longest attempt records: an execution name of 80 characters, a two-digit attempt number,
on each capacity (spot adds MaxWait, on-demand a warm pool)."""

FIELDS = {
    "spec.hyperparameters": ("HyperParameters",),
    "spec.environment": ("Environment",),
    "spec.metrics": ("AlgorithmSpecification", "MetricDefinitions"),
    "spec.inputs": ("InputDataConfig",),
    "metadata.labels": ("Tags",),
}
"""Manifest fields that can be long, and where each lands in the CreateTrainingJob payload."""


def payload_bytes(request: Mapping[str, Any]) -> int:
    return len(str(request["serviceRequestPayload"]).encode())


def request_bytes(request: Mapping[str, Any]) -> int:
    """The request as the SDK sends it (botocore's rest-json body: compact JSON)."""
    return _json_bytes(request)


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def request_size_problems(request: Mapping[str, Any]) -> list[str]:
    """What in a SubmitServiceJob request breaks Batch's size quotas (empty: nothing)."""
    problems = []
    if (size := payload_bytes(request)) > MAX_PAYLOAD_BYTES:
        problems.append(
            f"serviceRequestPayload is {size:,} bytes; AWS Batch takes at most {MAX_PAYLOAD_BYTES:,} (10 KiB)"
        )
    if (size := request_bytes(request)) > MAX_REQUEST_BYTES:
        problems.append(f"the request is {size:,} bytes; AWS Batch takes at most {MAX_REQUEST_BYTES:,} (30 KiB)")
    return problems


def manifest_size_errors(spec: JobSpec) -> list[ManifestError]:
    """The manifest's fields named when the job's largest request would break a size quota."""
    largest = max(
        (service_job_request(spec, attempt, _LARGEST_QUEUE, SETTINGS_ALLOWANCE) for attempt in _LARGEST_ATTEMPTS),
        key=payload_bytes,
    )
    problems = request_size_problems(largest)
    if not problems:
        return []
    payload = json.loads(largest["serviceRequestPayload"])
    sizes = {field: _json_bytes(_at(payload, keys)) for field, keys in FIELDS.items()}
    biggest = sorted(sizes, key=lambda field: -sizes[field])[:2]
    shares = ", ".join(f"{field} is {sizes[field]:,} bytes of it" for field in biggest)
    return [
        ManifestError(
            biggest[0],
            f"makes the training request too large: {'; '.join(problems)} ({shares}); "
            "keep large settings in a file in S3 (an input channel or spec.code) and pass its name",
        )
    ]


def _at(payload: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = payload
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value or []
