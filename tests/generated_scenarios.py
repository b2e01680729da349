"""Sandbox scenarios generated from a seed (a seeded random.Random: the same seed, the same files),
for reconciling every figure with the stand-in's ledger (test_billing_ledger_generated.py).

Each seed draws one small scenario, written as the files a user would write (a scenario YAML
and its manifests, read back through `load_scenario` and the schemas), that mixes what moves a
run's bill between instance types, capacity tiers and regions:

- `alternatives`: ml.g5.2xlarge with ml.g6.2xlarge (speed 0.8) and ml.g6e.2xlarge as
  alternatives, spot for g5 (and sometimes g6) gone: spot moves to another type, on-demand goes
  through InstancePreferences;
- `plan`: ml.p4d.24xlarge without spot, a training plan tagged for the team (`spotline:team`),
  sometimes ending mid-run (the job then resumes on on-demand);
- `regions`: spot of the home region gone after an interruption, us-west-2's spot there (with
  interruptions of its own, sometimes);
- `preemption`: a two-team fleet on two ml.g5.2xlarge where a borrowing job is preempted when
  the lending team's job comes (cross-share preemption);
- on every kind: one or two instances, spot interruptions, short jobs (an hour or two).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import yaml

KINDS = ("alternatives", "plan", "regions", "preemption")
START = "2026-12-01T06:00:00Z"
TEAM = "search-ranking"
ACCOUNT = "123456789012"
IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28"


@dataclass(frozen=True)
class GeneratedScenario:
    """The files of one generated scenario: `scenario.yaml` and its manifests, by file name."""

    seed: int
    kind: str
    files: dict[str, str]

    def write(self, directory: Path) -> Path:
        """Write the files into `directory`; returns the scenario file's path."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (directory / name).write_text(text)
        return directory / "scenario.yaml"


def generated_scenario(seed: int) -> GeneratedScenario:
    """The scenario of `seed`: its kind is `KINDS[seed % 4]`, everything else drawn from the seed."""
    draw = random.Random(seed)
    kind = KINDS[seed % len(KINDS)]
    build = {"alternatives": _alternatives, "plan": _plan, "regions": _regions, "preemption": _preemption}[kind]
    scenario, manifests = build(draw, seed)
    files = {f"{name}.yaml": yaml.safe_dump(body, sort_keys=False) for name, body in manifests.items()}
    files["scenario.yaml"] = yaml.safe_dump(
        {"name": f"generated-{seed}-{kind}", "start": START, **scenario}, sort_keys=False
    )
    return GeneratedScenario(seed, kind, files)


def _minutes(seconds: float) -> str:
    return f"{round(seconds / 60)}m"


def _manifest(
    name: str,
    *,
    hours: float,
    instance_type: str = "ml.g5.2xlarge",
    count: int = 1,
    team: str = TEAM,
    priority: int = 300,
    deadline_hours: float | None = None,
    **capacity: object,
) -> dict[str, object]:
    """A spot-first training manifest of `hours` expected work, checkpointing every 15 minutes."""
    resources: dict[str, object] = {"instanceType": instance_type, "instanceCount": count}
    if alternatives := capacity.pop("alternatives", None):
        resources["alternatives"] = alternatives
    limits: dict[str, object] = {
        "strategy": "spot-first",
        "maxRuntime": f"{max(4, round(hours * 3))}h",
        "maxWait": f"{max(8, round(hours * 6))}h",
        "expectedDuration": _minutes(hours * 3600),
    }
    if deadline_hours is not None:
        deadline = 6 * 60 + round(deadline_hours * 60)  # minutes after midnight of the start's day
        limits["deadline"] = f"2026-12-01T{deadline // 60:02d}:{deadline % 60:02d}:00Z"
    limits |= capacity
    limits["retry"] = {"maxAttempts": 4, "backoff": "2m"}
    return {
        "apiVersion": "spotline/v1",
        "kind": "TrainingJob",
        "metadata": {"team": team, "name": name, "owner": "bob@example.com"},
        "spec": {
            "image": IMAGE,
            "roleArn": f"arn:aws:iam::{ACCOUNT}:role/spotline/{team}-training",
            "resources": resources,
            "inputs": [{"name": "train", "s3Uri": f"s3://{team}-data/clicks/2026-11-30/train/"}],
            "output": {"s3Uri": f"s3://{team}-models/{name}/"},
            "checkpoint": {"s3Uri": f"s3://{team}-checkpoints/{name}/", "intervalMinutes": 15},
            "capacity": limits,
            "priority": priority,
        },
    }


def _interruptions(draw: random.Random, seconds: float, most: int) -> list[str]:
    return [_minutes(t) for t in sorted(draw.uniform(0.15, 0.85) * seconds for _ in range(draw.randint(0, most)))]


def _alternatives(draw: random.Random, seed: int) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    hours = draw.choice([1.0, 1.5, 2.0])
    count = draw.choice([1, 2])
    manifest = _manifest(
        f"alternatives-{seed}",
        hours=hours,
        count=count,
        deadline_hours=hours * draw.choice([2.0, 3.0]) + 1,
        alternatives=[{"instanceType": "ml.g6.2xlarge", "speed": 0.8}, {"instanceType": "ml.g6e.2xlarge"}],
    )
    gone = {"capacityGaps": [{"from": "0s", "to": "1d"}]}
    # g5's spot is gone from the start, or from an interruption mid-run (the job then trains on two types).
    gone_at = draw.choice([0, round(draw.uniform(0.3, 0.6) * hours * 3600)])
    g5 = {"interruptions": [_minutes(gone_at)], "capacityGaps": [{"from": _minutes(gone_at), "to": "1d"}]}
    types: dict[str, object] = {"ml.g5.2xlarge": {"spot": g5 if gone_at else gone}}
    # The L4 really runs as fast as declared, or at the A10G's speed (measured, not declared).
    types["ml.g6.2xlarge"] = {"speed": draw.choice([0.8, 1.0])}
    roll = draw.random()
    if roll < 0.3:  # no spot for the first alternative either: spot on the last one
        types["ml.g6.2xlarge"] |= {"spot": gone}
    elif roll < 0.5:  # no spot at all: on-demand through InstancePreferences
        types["ml.g6.2xlarge"] |= {"spot": gone}
        types["ml.g6e.2xlarge"] = {"spot": gone}
    scenario: dict[str, object] = {
        "manifests": ["job.yaml"],
        "spot": {"startDelay": f"{draw.choice([3, 5])}m", "interruptions": _interruptions(draw, hours * 3600, 2)},
        "onDemand": {"startDelay": f"{draw.choice([5, 8])}m"},
        "instanceTypes": types,
    }
    return scenario, {"job": manifest}


def _plan(draw: random.Random, seed: int) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    hours = draw.choice([1.0, 1.5, 2.0])
    count = draw.choice([1, 2])
    deadline = hours + draw.choice([1.0, 2.0])
    manifest = _manifest(
        f"plan-{seed}",
        hours=hours,
        instance_type="ml.p4d.24xlarge",
        count=count,
        deadline_hours=deadline,
        trainingPlan="auto",
    )
    real = hours * 3600 * (draw.choice([1.5, 1.8]) if (ends := draw.random() < 0.5) else 1.0)
    # A plan that lasts for the declared work (to 45 minutes past the deadline: SageMaker terminates
    # the plan's instances from 30 minutes before its end), or for the rest of the day; the one that
    # ends mid-run meets a job that really needs more than its manifest declares.
    plan_end = deadline * 3600 + (45 * 60 if ends else 12 * 3600)
    scenario: dict[str, object] = {
        "manifests": ["job.yaml"],
        "spot": {"startDelay": "5m", "capacityGaps": [{"from": "0s", "to": "1d"}]},
        "onDemand": {"startDelay": f"{draw.choice([5, 8])}m"},
        "training": {"duration": _minutes(real)},
        "trainingPlans": [
            {
                "name": f"search-p4d-{seed}",
                "instanceType": "ml.p4d.24xlarge",
                "instances": count + draw.choice([0, 1]),
                "from": "0s",
                "to": _minutes(plan_end),
                "tags": {"spotline:team": TEAM},
            }
        ],
    }
    return scenario, {"job": manifest}


def _regions(draw: random.Random, seed: int) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    hours = draw.choice([1.0, 1.5, 2.0])
    count = draw.choice([1, 2])
    manifest = _manifest(
        f"regions-{seed}",
        hours=hours,
        count=count,
        deadline_hours=hours * 3 + 1,
        regions=["us-east-1", "us-west-2"],
    )
    gone_at = round(draw.uniform(0.2, 0.6) * hours * 3600)
    scenario: dict[str, object] = {
        "manifests": ["job.yaml"],
        "spot": {
            "startDelay": "5m",
            "interruptions": [_minutes(gone_at)],
            "capacityGaps": [{"from": _minutes(gone_at), "to": "1d"}],
        },
        "onDemand": {"startDelay": "8m"},
        "regions": {
            "us-west-2": {
                "spot": {
                    "startDelay": f"{draw.choice([3, 5])}m",
                    "interruptions": [
                        _minutes(gone_at + t * 60) for t in draw.sample([20, 40, 60], draw.randint(0, 1))
                    ],
                    "capacityGaps": [],
                }
            }
        },
    }
    return scenario, {"job": manifest}


def _policy_entry(team: str, quota: int, max_priority: int, *, shared_with: str = "") -> dict[str, object]:
    image = IMAGE.rsplit(":", 1)[0] + ":*"
    return {
        "instanceFamilies": ["g5"],
        "maxInstances": 4,
        "maxPriority": max_priority,
        "quotas": {"ml.g5.2xlarge": quota},
        "roles": [f"arn:aws:iam::{ACCOUNT}:role/spotline/{team}-training"],
        "images": [image],
        **({"shares": {image: [shared_with]}} if shared_with else {}),
        "s3Prefixes": [f"s3://{team}-data/", f"s3://{team}-models/", f"s3://{team}-checkpoints/"],
    }


def _preemption(draw: random.Random, seed: int) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    bulk_hours = draw.choice([1.0, 1.5])
    urgent_hours = draw.choice([0.5, 1.0])
    arrives = draw.choice([20, 30, 40])  # minutes: the lending team's job comes while bulk borrows
    bulk = _manifest(f"bulk-{seed}", hours=bulk_hours, count=2, team="bulk", priority=10)
    urgent = _manifest(
        f"urgent-{seed}", hours=urgent_hours, team="urgent", priority=300, deadline_hours=arrives / 60 + 3
    )
    scenario: dict[str, object] = {
        "queue": {"capacity": {"ml.g5.2xlarge": 2}},
        "submissions": [
            {"manifest": "bulk.yaml", "at": "0h"},
            {"manifest": "urgent.yaml", "at": f"{arrives}m"},
        ],
        "spot": {"startDelay": "5m", "interruptions": _interruptions(draw, bulk_hours * 3600, 1)},
        "onDemand": {"startDelay": "8m"},
        "teamPolicy": {
            "teams": {
                "bulk": _policy_entry("bulk", 1, 50, shared_with="urgent"),
                "urgent": _policy_entry("urgent", 1, 500),
            }
        },
    }
    return scenario, {"bulk": bulk, "urgent": urgent}
