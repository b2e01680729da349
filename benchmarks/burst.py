"""Benchmark (not a test): a burst of uploads on the local stack, every S3 event delivered twice.
50 teams upload 20 manifests each within a minute (1,000 uploads); EventBridge delivers each
Object Created event to Intake twice (it delivers at least once), in the order S3 emitted them,
the second copy after the first's. Then every execution runs to its end. Printed: uploads,
deliveries, executions started, duplicates Intake recognised, service jobs submitted, jobs
submitted twice for one execution, executions that did not succeed, jobs left running, the
wall time, the CPU time and the peak memory of the process.

Run: .venv/bin/python benchmarks/burst.py [TEAMS] [PER_TEAM]
"""

from __future__ import annotations

import json
import logging
import resource
import sys
import time
from collections import Counter
from datetime import UTC, datetime

from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec.model import JobSpec
from spotline.core.training.service_jobs import job_name_prefix
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.registry import quota_totals
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance
from spotline_dev.harness.sandbox.runs import QUIET, powertools_environment_for
from spotline_dev.harness.standin import TrainingBehaviour

EXAMPLE = PROJECT_ROOT / "examples" / "manifests" / "ranker-v2.yaml"
START = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def manifest(team: str, n: int) -> bytes:
    text = EXAMPLE.read_text().replace("ranker-training", f"{team}-training").replace("search-ranking", team)
    text = text.replace("/ranker:", f"/{team}-ranker:")  # each team its own image repository
    return text.replace("name: ranker-v2", f"name: ranker-{n:02d}").replace("/ranker-v2/", f"/ranker-{n:02d}/").encode()


def allowance(spec: JobSpec, n: int, jobs: int) -> dict[str, object]:
    """What the team's first manifest needs, widened to the team's three buckets (every job's
    prefixes), with a quota for all its jobs at once (the burst, not the queue, is measured here)
    in a share of five teams (a queue holds 20 shares)."""
    buckets = [f"s3://{spec.team}-{kind}/" for kind in ("data", "models", "checkpoints")]
    share = {"quotas": {spec.instance_type: jobs}, "quotaShare": f"org-{n // 5:02d}"}
    return team_allowance(spec) | {"s3Prefixes": buckets} | share


def half_hour_training(_request: dict[str, object]) -> TrainingBehaviour:
    return TrainingBehaviour(duration=1800)


def deliver_each_twice(stack: LocalStack) -> tuple[int, Counter[str], dict[str, set[str]]]:
    """Drain the upload rule's tap, invoking Intake twice with each event: the deliveries, their
    outcomes counted, and the executions Intake answered with per uploaded key."""
    sqs, deliveries, outcomes = stack.client("sqs"), 0, Counter[str]()
    answered: dict[str, set[str]] = {}
    for queue_url, (function, rule) in stack.rule_taps.items():
        if "ManifestUploaded" not in rule:
            continue
        while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            for message in messages:
                event = json.loads(message["Body"])
                for _copy in range(2):
                    answer = stack.invoke(function, event)
                    deliveries += 1
                    outcomes[str(answer.get("status"))] += 1
                    key = event["detail"]["object"]["key"]
                    answered.setdefault(key, set()).update([answer["executionArn"]] if "executionArn" in answer else [])
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return deliveries, outcomes, answered


def main(teams: int, per_team: int) -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)  # the failures are counted below
    started = time.perf_counter()
    uploads = {
        f"manifests/team-{t:03d}/ranker-{n:02d}.yaml": manifest(f"team-{t:03d}", n)
        for t in range(teams)
        for n in range(per_team)
    }
    specs: dict[str, JobSpec] = {}
    for body in uploads.values():
        spec = validate_bytes(body, now=START).spec
        assert spec is not None
        specs.setdefault(spec.team, spec)
    policy = {"teams": {team: allowance(spec, n, per_team) for n, (team, spec) in enumerate(specs.items())}}
    with (
        powertools_environment_for(False),
        start_local_stack(
            START, environment=QUIET, team_policy=policy, behaviour=half_hour_training, capacity=quota_totals(policy)
        ) as stack,
    ):
        for spec in specs.values():
            prepare_account(stack.client, spec)
        s3 = stack.client("s3")
        for i, (key, body) in enumerate(uploads.items()):
            if i:
                stack.clock.advance(60 / len(uploads))
            s3.put_object(Bucket=stack.bucket, Key=key, Body=body)
        deliveries, outcomes, answered = deliver_each_twice(stack)
        sfn = stack.client("stepfunctions")
        machine = stack.physical["TrainingLifecycle"]
        arns = [
            e["executionArn"]
            for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=machine)
            for e in page["executions"]
        ]
        ends = Counter(stack.wait_for_execution(arn, timeout=3600)["status"] for arn in arns)
        jobs = stack.standin.jobs
        prefixes = [job_name_prefix(arn.rsplit(":", 1)[-1]) for arn in arns]
        per_execution = Counter(p for job in jobs for p in prefixes if job.job_name.startswith(p))
        left = [job for job in jobs if job.status not in ("SUCCEEDED", "FAILED")]
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
    print(f"Burst: {teams} teams x {per_team} uploads within a minute, every S3 event delivered twice")
    rows = [
        ("uploads", len(uploads)),
        ("deliveries to Intake", deliveries),
        ("Intake outcomes", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))),
        ("executions started", len(arns)),
        ("uploads without an execution (lost)", sum(1 for key in uploads if not answered.get(key))),
        ("uploads answered with two executions", sum(1 for key in uploads if len(answered.get(key, ())) > 1)),
        ("executions by end", ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))),
        ("service jobs submitted", len(jobs)),
        ("executions with more than one job (duplicate work)", sum(1 for n in per_execution.values() if n > 1)),
        ("jobs left running", len(left)),
    ]
    for label, value in rows:
        print(f"{label:<52} {value}")
    # CPU seconds too: the wall time of a machine shared with other work says little on its own.
    label = "wall seconds, CPU seconds, peak memory (MiB)"
    print(f"{label:<52} replayed in (wallSeconds) {wall:.1f} {cpu:.1f} {peak:.0f}")


if __name__ == "__main__":
    arguments = [int(a) for a in sys.argv[1:3]]
    main(*(arguments + [50, 20][len(arguments) :]))
