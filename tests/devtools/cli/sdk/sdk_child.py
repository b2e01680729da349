"""The SDK runs in a child process with no way out: fake credentials, no AWS config of the
machine, and a proxy that refuses every connection, so a request that needed AWS fails the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAINERS = HERE / "trainers"


def offline_environment(home: Path) -> dict[str, str]:
    dead_end = "http://127.0.0.1:9"  # the discard port: nothing listens, every connection is refused
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SAGEMAKER_"))}
    environment.update(
        HOME=str(home),
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        HTTPS_PROXY=dead_end,
        HTTP_PROXY=dead_end,
        NO_PROXY="",
    )
    return environment


def sdk_requests(references: list[str], home: Path) -> dict[str, dict[str, object]]:
    completed = subprocess.run(
        [sys.executable, str(HERE / "sdk_requests.py"), *references],
        capture_output=True,
        text=True,
        env=offline_environment(home),
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])  # type: ignore[no-any-return]
