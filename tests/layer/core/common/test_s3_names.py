"""An S3 URI the schema refuses says which bucket naming rule it breaks."""

from __future__ import annotations

import pytest

from conftest import EXAMPLE_MANIFEST, NOW
from spotline.core.common.s3_names import s3_uri_problem
from spotline.core.manifest.manifest import validate_bytes


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("https://bucket/x/", "it must begin with s3://"),
        ("s3:///x/", "the bucket name is missing"),
        ("s3://ab/x/", "has 2 characters; S3 bucket names have 3 to 63"),
        (f"s3://{'a' * 64}/x/", "has 64 characters"),
        ("s3://Search-Ranking/x/", "has uppercase letters; S3 bucket names are lowercase"),
        ("s3://search_ranking/x/", "has '_'; S3 bucket names use only a-z, 0-9, '.' and '-'"),
        ("s3://-search/x/", "must begin and end with a letter or digit"),
    ],
)
def test_each_broken_rule_is_named(uri: str, words: str) -> None:
    problem = s3_uri_problem(uri)
    assert problem and words in problem


def test_a_well_formed_uri_has_no_problem() -> None:
    assert s3_uri_problem("s3://search-ranking.data-1/clicks/") is None


def test_the_manifest_error_says_what_is_wrong_with_the_bucket() -> None:
    text = EXAMPLE_MANIFEST.read_text().replace("s3://search-ranking-models/", "s3://search_ranking_models/")
    result = validate_bytes(text.encode(), now=NOW)
    (error,) = [e for e in result.errors if e.path == "spec.output.s3Uri"]
    assert error.message.startswith("must be an S3 URI: s3://<bucket>/<prefix> (got 's3://search_ranking_models/")
    assert "has '_'; S3 bucket names use only a-z, 0-9, '.' and '-'" in error.message
