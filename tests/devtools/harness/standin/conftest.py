"""The `make_rig` fixture: a fresh stand-in, installed on the default boto3 session, inside moto."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto import mock_aws

from devtools.harness.standin.fixture_rig import REGION, SHAPE_CHECKED, ManualClock, Rig, RigFactory
from spotline_dev.harness.standin import BatchSageMakerStandIn, InMemoryCheckpointStore, SpotWeather, TrainingBehaviour

_LOADER = botocore.loaders.create_loader()


@pytest.fixture
def make_rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[RigFactory]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)  # botocore's retry back-off, not wall time

    def factory(weather: SpotWeather | None = None, behaviour: TrainingBehaviour | None = None, **queue: Any) -> Rig:
        clock, store = ManualClock(), InMemoryCheckpointStore()
        chosen = behaviour or TrainingBehaviour(duration=3600)
        standin = BatchSageMakerStandIn(clock, weather or SpotWeather(), lambda _request: chosen, store)
        core = botocore.session.get_session()
        core.register_component("data_loader", _LOADER)  # parse the (large) SageMaker model once
        boto3.setup_default_session(botocore_session=core)
        session = boto3.DEFAULT_SESSION
        assert session is not None
        standin.install(session)
        raw: list[tuple[str, dict[str, Any]]] = []

        def capture(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
            if operation_model.name in SHAPE_CHECKED and response_dict["status_code"] == 200:
                raw.append((operation_model.name, json.loads(response_dict["body"] or b"{}")))

        session.events.register("before-parse", capture)
        queue_arn = standin.register_queue("spotline-training", **queue)
        batch, sagemaker = (boto3.client(service, region_name=REGION) for service in ("batch", "sagemaker"))
        return Rig(clock, standin, store, batch, sagemaker, queue_arn, raw)

    with mock_aws():
        yield factory
