"""The real statemachines/training_lifecycle.asl.json, executed by moto's interpreter with the
real handlers, substitutions taken from template.yaml."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from conftest import NOW, ROOT, upload
from spotline_dev.local_aws import LocalStack
from spotline_dev.template import load_template

ASL = ROOT / "statemachines" / "training_lifecycle.asl.json"
TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


def _run(stack: LocalStack, key: str, body: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    upload(stack, key, body)
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"])
    return execution, stack.history(started["executionArn"])


def _entered_states(history: list[dict[str, Any]]) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]


def test_the_deployed_definition_is_the_file_with_the_template_substitutions(stack: LocalStack) -> None:
    described = stack.client("stepfunctions").describe_state_machine(stateMachineArn=stack.state_machine_arn())
    substitutions = load_template()["Resources"]["TrainingLifecycle"]["Properties"]["DefinitionSubstitutions"]
    text = ASL.read_text()
    for key in substitutions:
        assert "${" + key + "}" in text
        text = text.replace(
            "${" + key + "}", f"arn:aws:lambda:us-east-1:123456789012:function:spotline-local-{key.removesuffix('Arn')}"
        )
    assert json.loads(described["definition"]) == json.loads(text)


def test_valid_manifest_is_accepted_with_its_normalized_spec(stack: LocalStack, example_manifest: bytes) -> None:
    execution, history = _run(stack, "manifests/search-ranking/ranker-v2.yaml", example_manifest)
    assert execution["status"] == "SUCCEEDED"
    assert _entered_states(history) == ["LoadManifest", "IsManifestValid?", "ManifestAccepted"]
    output = json.loads(execution["output"])
    assert output["key"] == "manifests/search-ranking/ranker-v2.yaml"
    assert output["manifest"]["valid"] is True
    assert output["manifest"]["spec"]["deadline"] == "2026-12-02T06:00:00Z"


def test_invalid_manifest_fails_as_manifest_invalid_listing_every_error(
    stack: LocalStack, example_manifest: bytes
) -> None:
    body = example_manifest.replace(
        b"image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28",
        b"image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:latest",
    )
    body = body.replace(b"intervalMinutes: 15", b"intervalMinutes: 90")
    execution, history = _run(stack, "manifests/search-ranking/ranker-v2.yaml", body)

    assert execution["status"] == "FAILED"
    assert execution["error"] == "ManifestInvalid"
    assert execution["cause"].startswith("2 error(s): ")
    assert "spec.checkpoint.intervalMinutes: must be at most 60" in execution["cause"]
    assert "spec.image: the tag 'latest' is not allowed" in execution["cause"]
    assert _entered_states(history) == ["LoadManifest", "IsManifestValid?", "ManifestInvalid"]
    reports = stack.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="reports/")["Contents"]
    assert [r["Key"] for r in reports] == ["reports/manifests/search-ranking/ranker-v2.yaml.rejected.json"]


def test_throttled_lambda_is_retried_with_backoff(stack: LocalStack, example_manifest: bytes) -> None:
    stack.throttle("LoadManifestFunction", times=2)
    execution, history = _run(stack, "manifests/search-ranking/ranker-v2.yaml", example_manifest)
    assert execution["status"] == "SUCCEEDED"
    failures = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
    assert failures == ["Lambda.TooManyRequestsException"] * 2
    assert stack.clock.now() > NOW  # back-off waited on the virtual clock
    assert stack.clock.now() < NOW + timedelta(minutes=5)


def test_every_lambda_task_retries_transient_errors_with_jitter() -> None:
    states = json.loads(Path(ASL).read_text())["States"]
    tasks = {name: s for name, s in states.items() if s.get("Resource") == "arn:aws:states:::lambda:invoke"}
    assert tasks
    for name, state in tasks.items():
        transient = [r for r in state.get("Retry", []) if set(r["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS]
        assert transient, f"{name} does not retry transient Lambda errors"
        assert transient[0]["JitterStrategy"] == "FULL"
        assert state["Parameters"]["Payload"]["execution.$"] == "$$.Execution.Id"
