"""`spotline render` with the stack's network and encryption settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.cli.entry import EXIT_OK, EXIT_USAGE, main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "manifests" / "ranker-v2.yaml"  # ml.g5.2xlarge
NOW = "2026-11-29T00:00:00Z"


def _payload(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, object]:
    assert main(["render", str(EXAMPLE), "--payload", "--now", NOW, *flags]) == EXIT_OK
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_render_shows_the_request_the_stack_settings_make(capsys: pytest.CaptureFixture[str]) -> None:
    plain = _payload(capsys)
    assert "VpcConfig" not in plain and "EnableNetworkIsolation" not in plain
    payload = _payload(
        capsys,
        "--subnets",
        "subnet-0a,subnet-0b",
        "--security-groups",
        "sg-01",
        "--network-isolation",
        "--inter-container-encryption",
        "--output-kms-key",
        "alias/spotline-models",
    )
    assert payload["VpcConfig"] == {"SecurityGroupIds": ["sg-01"], "Subnets": ["subnet-0a", "subnet-0b"]}
    assert payload["EnableNetworkIsolation"] is True
    assert payload["EnableInterContainerTrafficEncryption"] is True
    assert payload["OutputDataConfig"] == {
        "S3OutputPath": "s3://search-ranking-models/ranker-v2/",
        "KmsKeyId": "alias/spotline-models",
    }


def test_render_says_when_the_volume_key_cannot_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(EXAMPLE), "--payload", "--now", NOW, "--volume-kms-key", "alias/v"]) == EXIT_OK
    captured = capsys.readouterr()
    assert "VolumeKmsKeyId" not in json.loads(captured.out)["ResourceConfig"]
    assert "ml.g5.2xlarge trains on local NVMe storage" in captured.err


def test_render_refuses_subnets_without_security_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(EXAMPLE), "--subnets", "subnet-0a"]) == EXIT_USAGE
    assert "both subnet ids and security group ids" in capsys.readouterr().err


def _render(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    assert main(["render", str(EXAMPLE), "--now", NOW, *flags]) == EXIT_OK
    return capsys.readouterr().out


def test_render_exact_prints_the_request_as_sent(capsys: pytest.CaptureFixture[str]) -> None:
    request = json.loads(_render(capsys, "--exact"))
    assert request["serviceJobType"] == "SAGEMAKER_TRAINING"
    assert isinstance(request["serviceRequestPayload"], str)  # Batch takes the payload as one JSON string
    assert json.loads(request["serviceRequestPayload"]) == _payload(capsys)


def test_render_shows_the_payload_parsed_in_a_section_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    exact = json.loads(_render(capsys, "--exact"))
    out = _render(capsys)
    assert '\\"' not in out  # no escaped JSON: the payload is shown as JSON, not as a string of it
    head, rest = out.split("\n", 1)
    assert head.startswith("SubmitServiceJob request") and "--exact" in head
    request_text, payload_part = rest.split("\n\n", 1)
    payload_head, payload_text = payload_part.split("\n", 1)
    assert payload_head.startswith("serviceRequestPayload, parsed:")
    assert json.loads(payload_text) == json.loads(exact["serviceRequestPayload"])
    request = json.loads(request_text)
    assert request.pop("serviceRequestPayload") == "<serviceRequestPayload below, sent as one JSON string>"
    assert request == {k: v for k, v in exact.items() if k != "serviceRequestPayload"}
    assert '\n  "TrainingJobName": "ranker-v2-' in payload_text  # indented, one field a line


def test_render_takes_exact_or_payload_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(EXAMPLE), "--exact", "--payload"]) == EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err
