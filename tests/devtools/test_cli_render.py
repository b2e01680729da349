"""`spotline render` with the stack's network and encryption settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.cli import EXIT_OK, EXIT_USAGE, main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "manifests" / "ranker-v2.yaml"  # ml.g5.2xlarge
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
