"""CheckNoLiveJob across regions: an earlier run's attempt placed on a peer region's namesake queue
and still live there keeps a new run of the same job from starting (it would share its checkpoint)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from state_samples import manifest_state

from conftest import NOW, example_spec, team_policy_for
from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.regions.regions import arn_in_region
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import resources_of_type
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import SpotWeather

PEER = "us-west-2"
MACHINE = "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:"
EARLIER, LATER = MACHINE + "search-ranking-ranker-v2-earlier", MACHINE + "search-ranking-ranker-v2-later"
SPEC = replace(example_spec(), regions=("us-east-1", PEER))


@pytest.fixture
def peered() -> Iterator[LocalStack]:
    with start_local_stack(NOW, team_policy=team_policy_for(SPEC), peers={PEER: SpotWeather()}) as local:
        prepare_account(local.client, SPEC)
        yield local


def _check(stack: LocalStack) -> dict[str, object]:
    event = {"execution": LATER, "input": {"manifest": manifest_state(SPEC)}}
    return stack.invoke("CheckNoLiveJobFunction", event)  # type: ignore[no-any-return]


def test_an_earlier_runs_attempt_live_in_a_peer_region_holds_the_new_run(peered: LocalStack) -> None:
    assert _check(peered)["clear"] is True
    (queue,) = resources_of_type(peered.template, "AWS::Batch::JobQueue")
    request = submit_service_job_request(SPEC, Attempt(EARLIER, 2, "spot"), arn_in_region(peered.physical[queue], PEER))
    job = peered.session.client("batch", region_name=PEER).submit_service_job(**request)
    answer = _check(peered)
    assert answer["clear"] is False
    (found,) = answer["found"]  # type: ignore[misc]
    assert found["jobId"] == job["jobId"]
    assert "execution search-ranking-ranker-v2-earlier" in str(answer["summary"])
