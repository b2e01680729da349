"""The team policy binds each team to its own roles, data, images and limits; every refusal
names the manifest field, and a broken policy names its own field."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from builders import example_spec
from spotline.core.spec.model import InputChannel, JobSpec
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid

NOW = datetime(2026, 11, 29, tzinfo=UTC)
ACCOUNT = "123456789012"
REGISTRY = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com"
DLC_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-gpu-py311"
SEARCH_RANKING: dict[str, Any] = {
    "instanceFamilies": ["g5"],
    "maxInstances": 2,
    "maxPriority": 500,
    "roles": [f"arn:aws:iam::{ACCOUNT}:role/spotline/ranker-*"],
    "s3Prefixes": [
        "s3://search-ranking-data/",
        "s3://search-ranking-models/",
        "s3://search-ranking-checkpoints/",
    ],
    "images": [f"{REGISTRY}/ranker:*"],
}
TEAM_B: dict[str, Any] = {
    "instanceFamilies": ["g5"],
    "roles": [f"arn:aws:iam::{ACCOUNT}:role/spotline/team-b/*"],
    "s3Prefixes": ["s3://team-b-data/"],
    "images": [f"{REGISTRY}/team-b/*"],
}


def _spec() -> JobSpec:
    return example_spec(NOW)


def _policy(**search_ranking: Any) -> TeamPolicy:
    entry = {**SEARCH_RANKING, **search_ranking}
    return TeamPolicy.from_json(json.dumps({"teams": {"search-ranking": entry, "team-b": TEAM_B}}))


def _paths(policy: TeamPolicy, spec: JobSpec) -> list[str]:
    return [error.path for error in policy.check(spec)]


def test_the_example_is_within_its_teams_allowance() -> None:
    assert _policy().check(_spec()) == []


def test_an_unlisted_team_may_not_train() -> None:
    assert _paths(TeamPolicy.from_json('{"teams": {}}'), _spec()) == ["metadata.team"]


def test_families_instance_count_and_priority_are_limited() -> None:
    spec = replace(_spec(), instance_type="ml.p4d.24xlarge", instance_count=3, priority=501)
    assert _paths(_policy(), spec) == ["spec.resources.instanceType", "spec.resources.instanceCount", "spec.priority"]


@pytest.mark.parametrize("instance", ["ml.c7i-flex.4xlarge", "ml.p6-b200.48xlarge", "ml.p6e-gb200.36xlarge"])
def test_a_family_with_a_dash_in_its_name_can_be_allowed(instance: str) -> None:
    family = instance.split(".")[1]
    spec = replace(_spec(), instance_type=instance)
    assert _paths(_policy(), spec) == ["spec.resources.instanceType"]
    assert _policy(instanceFamilies=["g5", family]).check(spec) == []


def test_another_teams_role_buckets_and_image_are_refused_each_naming_its_field() -> None:
    spec = replace(
        _spec(),
        role_arn=f"arn:aws:iam::{ACCOUNT}:role/spotline/team-b/training",
        image=f"{REGISTRY}/team-b/trainer:1.0",
        inputs=(
            InputChannel("train", "s3://team-b-data/clicks/"),
            InputChannel("extra", "s3://search-ranking-data/x/"),
        ),
        output_s3_uri="s3://team-b-data/models/",
        checkpoint_s3_uri="s3://team-b-data/checkpoints/",
    )
    errors = {error.path: error.message for error in _policy().check(spec)}
    assert sorted(errors) == sorted(
        ["spec.roleArn", "spec.image", "spec.inputs[0].s3Uri", "spec.output.s3Uri", "spec.checkpoint.s3Uri"]
    )
    assert "team-b/training is not a role team search-ranking may pass" in errors["spec.roleArn"]
    assert "s3://team-b-data/clicks/ is outside team search-ranking's S3 prefixes" in errors["spec.inputs[0].s3Uri"]
    assert "team-b/trainer:1.0 is not an image team search-ranking may use" in errors["spec.image"]


def test_a_prefix_covers_its_folder_but_never_a_sibling_that_shares_its_name() -> None:
    policy = _policy(s3Prefixes=["s3://shared/team-a/"])
    for uri, allowed in [
        ("s3://shared/team-a/train/", True),
        ("s3://shared/team-a", True),
        ("s3://shared/team-ab/train/", False),
        ("s3://shared/team-", False),
        ("s3://shared-other/team-a/", False),
    ]:
        spec = replace(_spec(), inputs=(InputChannel("train", uri),), output_s3_uri="s3://shared/team-a/out/")
        spec = replace(spec, checkpoint_s3_uri="s3://shared/team-a/ckpt/")
        assert ("spec.inputs[0].s3Uri" not in _paths(policy, spec)) is allowed, uri


def test_deep_learning_containers_only_where_the_entry_allows_them() -> None:
    spec = replace(_spec(), image=DLC_IMAGE)
    assert _paths(_policy(), spec) == ["spec.image"]
    assert "Deep Learning Containers" in _policy().check(spec)[0].message
    assert _paths(_policy(deepLearningContainers=True), spec) == []


def test_a_team_whose_entry_lists_no_roles_or_images_may_use_none() -> None:
    policy = _policy(roles=[], images=[])
    assert {e.path: e.message for e in policy.check(_spec())} == {
        "spec.roleArn": "team search-ranking may pass no roles (its team policy lists no roles)",
        "spec.image": f"{_spec().image} is not an image team search-ranking may use (its team policy lists no images)",
    }


def test_runtime_and_volume_limits() -> None:
    policy = _policy(maxRuntime="24h", maxVolumeSizeGB=50)
    errors = {e.path: e.message for e in policy.check(_spec())}
    assert errors == {
        "spec.capacity.maxRuntime": "30h exceeds team search-ranking's limit of 24h",
        "spec.resources.volumeSizeGB": "100 GB exceeds team search-ranking's limit of 50 GB",
    }
    assert _policy(maxRuntime="PT30H", maxVolumeSizeGB=100).check(_spec()) == []


def test_concurrency_is_parsed_for_the_adapter_to_enforce() -> None:
    allowance = _policy(maxConcurrentJobs=3).allowance("search-ranking")
    assert allowance is not None and allowance.max_concurrent_jobs == 3


def test_a_teams_quotas_are_parsed_per_instance_type_and_absent_unless_declared() -> None:
    policy = _policy(quotas={"ml.p4d.24xlarge": 1, "ml.g5.2xlarge": 6})
    ranking, team_b = policy.allowance("search-ranking"), policy.allowance("team-b")
    assert ranking is not None and ranking.quotas == (("ml.g5.2xlarge", 6), ("ml.p4d.24xlarge", 1))
    assert team_b is not None and team_b.quotas is None  # its share: the whole environment
    whole = TeamPolicy.from_json('{"teams": {"search-ranking": {"quotas": {"ml.g5.2xlarge": 4.0}}}}')
    allowance = whole.allowance("search-ranking")
    assert allowance is not None and allowance.quotas == (("ml.g5.2xlarge", 4),)  # JSON Schema's integer allows 4.0
    assert _policy(quotas={"ml.g5.2xlarge": 1}).check(_spec()) == []  # a quota is no limit on a job: it may borrow


def test_quota_instances_is_refused_with_the_new_spelling() -> None:
    with pytest.raises(TeamPolicyInvalid) as raised:
        TeamPolicy.from_json('{"teams": {"search-ranking": {"quotaInstances": 4}}}')
    (error,) = raised.value.errors
    assert error.path == "teams.search-ranking.quotaInstances"
    assert error.message == (
        'is replaced by quotas, instances per instance type, as Batch quota shares count them: write "quotas": '
        '{"<instance type>": <instances>}, e.g. {"ml.g5.2xlarge": 4} (got 4)'
    )


@pytest.mark.parametrize(
    ("policy", "path", "words"),
    [
        ('{"teams": {"search-ranking": {"role": []}}}', "teams.search-ranking.role", "did you mean 'roles'"),
        (
            '{"teams": {"search-ranking": {"s3Prefixes": ["s3://b/no-slash"]}}}',
            "teams.search-ranking.s3Prefixes[0]",
            "ending in '/'",
        ),
        (
            '{"teams": {"search-ranking": {"s3Prefixes": ["s3://b/*/"]}}}',
            "teams.search-ranking.s3Prefixes[0]",
            "without wildcards",
        ),
        (
            '{"teams": {"search-ranking": {"roles": ["team-b"]}}}',
            "teams.search-ranking.roles[0]",
            "IAM role ARN pattern",
        ),
        ('{"teams": {"search-ranking": {"maxRuntime": "forever"}}}', "teams.search-ranking.maxRuntime", "duration"),
        (
            '{"teams": {"search-ranking": {"maxConcurrentJobs": 0}}}',
            "teams.search-ranking.maxConcurrentJobs",
            "at least 1",
        ),
        (
            '{"teams": {"search-ranking": {"quotas": {"ml.g5.2xlarge": 0}}}}',
            "teams.search-ranking.quotas.ml.g5.2xlarge",
            "at least 1",
        ),
        (
            '{"teams": {"search-ranking": {"quotas": {"ml.g5.2xlarge": 2.5}}}}',
            "teams.search-ranking.quotas.ml.g5.2xlarge",
            "must be an integer",
        ),
        (
            '{"teams": {"search-ranking": {"quotas": {"g5.2xlarge": 3}}}}',
            "teams.search-ranking.quotas.g5.2xlarge",
            "SageMaker training instance type",
        ),
        (
            '{"teams": {"search-ranking": {"quotas": {}}}}',
            "teams.search-ranking.quotas",
            "at least 1",
        ),
        (
            '{"teams": {"search-ranking": {"quotas": {'
            + ", ".join(f'"ml.g5.{n}xlarge": 1' for n in range(2, 8))
            + "}}}}",
            "teams.search-ranking.quotas",
            "at most 5 capacity limits",
        ),
        ('{"teams": {"Search Ranking": {}}}', "teams.Search Ranking", "lowercase"),
        ('{"teams": ', "(team policy)", "is not JSON"),
    ],
)
def test_a_broken_policy_names_its_field(policy: str, path: str, words: str) -> None:
    with pytest.raises(TeamPolicyInvalid) as raised:
        TeamPolicy.from_json(policy)
    assert [(e.path, words in e.message) for e in raised.value.errors] == [(path, True)], raised.value.errors


def test_training_code_must_come_from_the_teams_own_prefixes() -> None:
    own = replace(_spec(), code_s3_uri="s3://search-ranking-data/code/ranker.tar.gz", code_entry_point="train.py")
    assert _paths(_policy(), own) == []
    foreign = replace(own, code_s3_uri="s3://team-b-data/code/ranker.tar.gz")
    errors = _policy().check(foreign)
    assert [e.path for e in errors] == ["spec.code.s3Uri"]
    assert "outside team search-ranking's S3 prefixes" in errors[0].message


def test_warm_pools_only_up_to_the_teams_max_keep_alive() -> None:
    warm = replace(_spec(), strategy="on-demand", keep_alive_seconds=1800)
    refused = _policy().check(warm)
    assert [(e.path, e.message) for e in refused] == [
        ("spec.resources.keepAlive", "team search-ranking may keep no warm pools (its team policy has no maxKeepAlive)")
    ]
    assert _paths(_policy(maxKeepAlive="30m"), warm) == []
    too_long = _policy(maxKeepAlive="10m").check(warm)
    assert [(e.path, e.message) for e in too_long] == [
        ("spec.resources.keepAlive", "30m exceeds team search-ranking's limit of 10m")
    ]
    assert _paths(_policy(), replace(warm, keep_alive_seconds=0)) == []
