"""What StopSpotJob tells on-call for each move between capacity tiers and regions (pure): where the job goes,
the alert's kind, the next step, and the metric it counts."""

from __future__ import annotations

from dataclasses import dataclass

from spotline.core.state import RunStatus


@dataclass(frozen=True)
class Move:
    where: str
    kind: str  # the alert's kind (SNS attribute `outcome`)
    next_step: str
    metric: str


MOVES = {
    "spot": Move(
        "spot on {type}",
        "MovedToAnotherInstanceType",
        "Nothing is needed now: the job resumes on spot from its last checkpoint. If this recurs, put the type "
        "with spot capacity first in the manifest.",
        "InstanceTypeMoves",
    ),
    "zone": Move(
        "spot in {zone}",
        "MovedToAnotherZone",
        "Nothing is needed now: the job of many instances resumes on spot in another Availability Zone of the "
        "stack's subnets, from its last checkpoint. If this recurs, ask the platform team which zone has capacity "
        "of the type and list its subnets first in TrainingSubnetIds.",
        "ZoneMoves",
    ),
    "region": Move(
        "spot in {region}",
        "MovedToAnotherRegion",
        "Nothing is needed now: the job resumes on spot in another of its regions from a copy of its last "
        "checkpoint. If this recurs, list the region with spot capacity first in capacity.regions.",
        "RegionMoves",
    ),
    "training-plan": Move(
        "training plan {plan} ({type})",
        "MovedToTrainingPlan",
        "Nothing is needed now: the job resumes on the plan's reserved capacity from its last checkpoint (paid "
        "already); when the plan ends it moves on to on-demand.",
        "TrainingPlanFallbacks",
    ),
    "back-to-spot": Move(
        "spot again",
        "MovedBackToSpot",
        "Nothing is needed now: the job resumes on spot from its last checkpoint, with the slack its on-demand "
        "run kept (it moves to on-demand again at the last safe moment if spot goes).",
        "SpotReturns",
    ),
    "on-demand": Move(
        "on-demand",
        "MovedToOnDemand",
        "Nothing is needed now: the job resumes on on-demand from its last checkpoint (at a higher cost). If "
        "this recurs, give the deadline more slack or review the instance type's spot availability.",
        "OnDemandFallbacks",
    ),
}

WHAT = {
    "spot": "another instance type",
    "zone": "another zone",
    "region": "another region",
    "training-plan": "a training plan",
    "back-to-spot": "spot again",
    "on-demand": "on-demand",
}
"""Each move's kind in words, for the story and the picture."""


def move_of(status: RunStatus) -> tuple[str, Move, str]:
    """(the kind of move, its Move, where it goes in words) for a check that moved the job (its
    `next_capacity`, `next_instance_type`, `next_region`, `next_training_plan`): what StopSpotJob
    tells on-call and the story tells later."""
    tier = status.next_capacity or "on-demand"
    kinds = {"move-to-another-region": "region", "move-to-another-zone": "zone", "return-to-spot": "back-to-spot"}
    kind = kinds.get(status.action) or (tier if tier in MOVES else "on-demand")
    move = MOVES[kind]
    plan = status.next_training_plan.name if status.next_training_plan else None
    where = move.where.format(
        type=status.next_instance_type, plan=plan, region=status.next_region, zone=status.next_zone
    )
    return kind, move, where
