"""The local stack's shortcuts through moto and botocore give what moto's own code gives."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from spotline_dev.harness.local import moto_shortcuts as local_moto_shortcuts
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.moto_shortcuts import copy_json
from spotline_dev.harness.local.stack import S3CheckpointStore
from spotline_dev.harness.local.template import PROJECT_ROOT, load_template, load_template_pure

DEFINITION = (PROJECT_ROOT / "statemachines" / "training_lifecycle.asl.json").read_text()


def test_copy_json_copies_json_as_deepcopy_does_and_shares_nothing() -> None:
    state: dict[str, Any] = {"a": [1, 2.5, {"b": None, "c": True}], "d": "text", "e": {"f": [[], {}]}}
    copied = copy_json(state)

    assert copied == copy.deepcopy(state)
    copied["a"][2]["b"] = "changed"
    copied["e"]["f"][0].append(1)
    assert state["a"][2]["b"] is None and state["e"]["f"][0] == []


def test_copy_json_hands_anything_else_to_deepcopy() -> None:
    when = datetime(2026, 12, 3, tzinfo=UTC)
    value: dict[str, Any] = {"at": when, "pair": (1, [2]), "ok": True}
    copied = copy_json(value)

    assert copied == value
    assert copied["pair"][1] is not value["pair"][1]


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-03T18:55:35Z",
        "2026-12-03T18:55:35.123Z",
        "2026-12-03T18:55:35.123456+00:00",
        "2026-12-03T18:55:35+02:00",
        "2026-12-03T18:55:35-05:30",
        "2026-12-03T18:55:35",
        "2026-12-03T18:55:35.1234567Z",
        "Thu, 03 Dec 2026 18:55:35 GMT",
        "1796323335",
        "1796323335.25",
    ],
)
def test_timestamps_parse_as_botocores_own_parse_parses_them(text: str) -> None:
    from dateutil.tz import tzlocal

    ours = local_moto_shortcuts.parse_iso_timestamp(text, tzlocal)
    botocores = local_moto_shortcuts._BOTOCORE_TIMESTAMP(text, tzlocal)

    assert ours == botocores
    assert ours.isoformat() == botocores.isoformat()
    assert ours.utcoffset() == botocores.utcoffset()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(local_moto_shortcuts, "ASL_CACHE", tmp_path / "asl")
    local_moto_shortcuts._pickled_program.cache_clear()
    yield tmp_path / "asl"
    local_moto_shortcuts._pickled_program.cache_clear()


def test_a_parsed_program_is_kept_on_disk_and_read_back_the_same(cache: Path) -> None:
    fresh = pickle.dumps(local_moto_shortcuts._MOTO_ASL_PARSE(DEFINITION)[0])

    first, tree = local_moto_shortcuts._parse_asl(DEFINITION)
    (kept,) = cache.iterdir()
    local_moto_shortcuts._pickled_program.cache_clear()
    second, _ = local_moto_shortcuts._parse_asl(DEFINITION)

    assert tree is None
    assert pickle.dumps(first) == pickle.dumps(second) == fresh == kept.read_bytes()
    assert first is not second  # each execution gets its own program, as moto makes one each time


def test_a_damaged_cache_file_is_parsed_again(cache: Path) -> None:
    local_moto_shortcuts._parse_asl(DEFINITION)
    (kept,) = cache.iterdir()
    kept.write_bytes(kept.read_bytes()[:100])
    local_moto_shortcuts._pickled_program.cache_clear()

    program, _ = local_moto_shortcuts._parse_asl(DEFINITION)

    assert pickle.dumps(program) == pickle.dumps(local_moto_shortcuts._MOTO_ASL_PARSE(DEFINITION)[0])


def test_a_definition_that_does_not_parse_raises_every_time_and_leaves_nothing(cache: Path) -> None:
    broken = json.dumps({"StartAt": "Missing", "States": {"Done": {"Type": "Succeed"}}})[:-3]
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017 (whatever moto's parser raises, as it would)
            local_moto_shortcuts._parse_asl(broken)
    assert not cache.exists() or not any(cache.iterdir())


def test_the_template_is_read_as_pyyaml_reads_it_and_each_caller_gets_its_own_copy() -> None:
    first = load_template()
    assert first == load_template_pure()
    first["Resources"].clear()
    assert load_template()["Resources"]


def test_the_stand_ins_checkpoints_are_what_the_s3_api_reads(stack: LocalStack) -> None:
    s3 = stack.client("s3")
    s3.create_bucket(Bucket="checkpoints-of-a-team")
    store = S3CheckpointStore(stack.region, stack.account)
    assert store.read("s3://checkpoints-of-a-team/ranker/") is None
    assert store.read("s3://no-such-bucket/ranker/") is None

    store.write("s3://checkpoints-of-a-team/ranker/", {"step": 1200})

    body = s3.get_object(Bucket="checkpoints-of-a-team", Key="ranker/progress.json")["Body"].read()
    assert json.loads(body) == {"step": 1200} == store.read("s3://checkpoints-of-a-team/ranker")


def test_calls_other_than_s3_go_unsigned_and_still_reach_the_stacks_account(stack: LocalStack) -> None:
    seen: dict[str, bytes | None] = {}

    def record(request: Any, **_: Any) -> None:
        seen[request.url.split("/")[2].split(".")[0]] = request.headers.get("Authorization")

    for service in ("sqs", "s3"):
        client = stack.client(service)
        client.meta.events.register("before-send", record)
    queue_url = stack.client("sqs").create_queue(QueueName="signing-check")["QueueUrl"]
    stack.client("s3").list_buckets()

    assert seen["sqs"] is None
    assert seen["s3"] is not None and seen["s3"].startswith(b"AWS4-HMAC-SHA256")
    assert f"/{stack.account}/" in queue_url
