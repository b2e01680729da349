"""The training queue as CheckTrainingStatus sees it: the jobs waiting in it (for the queue wait
a new attempt would meet now), and raising a waiting job's priority when its deadline is at risk
(`spotline.core.capacity.queue`), told to on-call as a fallback is."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.billing.reporting import try_publish_alert
from spotline.aws.common.clients import client
from spotline.aws.common.observability import add_team_dimension, metrics
from spotline.aws.teams.team_registry import policy_for
from spotline.core.capacity.queue import WAITING_JOBS_READ, Escalation
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid


@dataclass(frozen=True, slots=True)
class QueueSettings:
    job_queue: str | None
    alert_topic_arn: str | None

    @classmethod
    def from_environment(cls) -> QueueSettings:
        return cls(os.environ.get("JOB_QUEUE"), os.environ.get("ALERT_TOPIC_ARN"))

    def team_policy(self, team: str) -> TeamPolicy:
        """The team's registry entry (cached: `spotline.aws.teams.team_registry.CACHE_SECONDS`); empty
        when it is invalid (changed by hand): then no priority is raised and no plan is used."""
        try:
            return policy_for(team)
        except TeamPolicyInvalid:
            return TeamPolicy({})

    def max_priority(self, team: str) -> int | None:
        allowance = self.team_policy(team).allowance(team)
        return allowance.max_priority if allowance else None


def waiting_jobs(job_queue: str | None, quota_share: str | None) -> list[dict[str, Any]]:
    """The queue's RUNNABLE jobs (one page), in the job's quota share when it has one."""
    if not job_queue:
        return []
    filters = [{"name": "QUOTA_SHARE_NAME", "values": [quota_share]}] if quota_share else []
    page = client("batch").list_service_jobs(
        jobQueue=job_queue,
        jobStatus="RUNNABLE",
        maxResults=WAITING_JOBS_READ,
        **({"filters": filters} if filters else {}),
    )
    return list(page.get("jobSummaryList") or [])


def raise_priority(
    job_id: str, spec: JobSpec, raised: Escalation, settings: QueueSettings, links: dict[str, str]
) -> bool:
    """UpdateServiceJob to the raised priority, then tell on-call (best effort). Returns whether
    the alert went out. Raising to the same priority again changes nothing (a retried check)."""
    client("batch").update_service_job(jobId=job_id, schedulingPriority=raised.raised)
    add_team_dimension(spec.team)
    metrics.add_metric(name="PriorityRaises", unit=MetricUnit.Count, value=1)
    if not settings.alert_topic_arn:
        return False
    return try_publish_alert(
        settings.alert_topic_arn,
        kind="PriorityRaised",
        team=spec.team,
        job=spec.name,
        owner=spec.owner,
        what="Spotline raised a queued training job's priority to keep its deadline.",
        cause=raised.reason,
        next_step="Nothing is needed now: the job runs before the team's lower-priority work. If the queue "
        "stays full, Spotline moves it to on-demand at the same priority; if this recurs, review the team's "
        "quota share (quotaInstances) or the deadline.",
        links_=links,
    )
