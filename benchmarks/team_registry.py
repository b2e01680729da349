"""Benchmark (not a test): the team registry at the scale of a large company's platform, on the
local stack. A registry of 300 teams (15 shared quota shares) is applied in one change through
ApplyTeamChange, then one team's entry is changed; printed: the documents' sizes, the wall time
of each apply and of its quota share sync, the S3 calls each made, the largest function
environment of the template, and what a run's admission reads.

Run: .venv/bin/python benchmarks/team_registry.py
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import boto3

from spotline.core.teams.team_registry import Change
from spotline_dev.harness.local.registry import apply_to_registry, quota_totals, seed_registry, synthetic_registry
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import function_environment, load_template, resources_of_type
from spotline_dev.harness.sandbox.runs import QUIET, powertools_environment_for

TEAMS, PER_SHARE = 300, 20
TYPES = ("ml.g5.2xlarge", "ml.g5.12xlarge", "ml.g6.2xlarge", "ml.p4d.24xlarge", "ml.c7i.4xlarge")
START = datetime(2026, 12, 1, tzinfo=UTC)


def _counting(calls: Counter[str]) -> None:
    def count(event_name: str, **_: Any) -> None:
        calls[event_name.removeprefix("before-call.")] += 1

    boto3.DEFAULT_SESSION.events.register("before-call.s3", count)  # type: ignore[union-attr]


def main() -> None:
    policy = synthetic_registry(
        TEAMS, per_share=PER_SHARE, instance_types=TYPES, account="123456789012", region="us-east-1"
    )
    template = load_template()
    environments = {
        name: len(json.dumps(function_environment(template, name)))
        for name in resources_of_type(template, "AWS::Serverless::Function")
    }
    with (
        powertools_environment_for(False),
        start_local_stack(START, environment=QUIET, capacity=quota_totals(policy)) as stack,
    ):
        calls: Counter[str] = Counter()
        _counting(calls)
        began = time.perf_counter()
        whole = seed_registry(stack, policy)
        whole_seconds = time.perf_counter() - began
        whole_calls = dict(calls)
        calls.clear()
        entry = dict(policy["teams"]["team-298"], maxInstances=4)
        began = time.perf_counter()
        one = apply_to_registry(stack, [Change("team-298", entry)])
        one_seconds = time.perf_counter() - began
        bucket = stack.physical["TeamRegistryBucket"]
        s3 = stack.client("s3")
        index_bytes = s3.head_object(Bucket=bucket, Key="index.json")["ContentLength"]
        record_bytes = s3.head_object(Bucket=bucket, Key="teams/team-298.json")["ContentLength"]
        shares = stack.client("batch").list_quota_shares(jobQueue=stack.physical["TrainingJobQueue"])["quotaShares"]
    print(
        json.dumps(
            {
                "teams": TEAMS,
                "quotaShares": len(shares),
                "indexBytes": index_bytes,
                "teamRecordBytes": record_bytes,
                "applyAllTeams": {
                    "wallSeconds": round(whole_seconds, 2),
                    "quotaShareSeconds": whole["quotaShareSeconds"],
                    "quotaShares": whole["quotaShares"],
                    "s3Calls": whole_calls,
                },
                "applyOneTeam": {
                    "wallSeconds": round(one_seconds, 2),
                    "quotaShareSeconds": one["quotaShareSeconds"],
                    "quotaShares": one["quotaShares"],
                    "s3Calls": dict(calls),
                },
                "largestFunctionEnvironmentBytes": max(environments.values()),
                "admissionReads": "1 GetObject (teams/<team>.json, fresh); later steps: cached 30 s",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
