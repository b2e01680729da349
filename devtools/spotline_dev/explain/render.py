"""The story as text, as `spotline explain` prints it."""

from __future__ import annotations

from spotline.core.billing.cost import format_usd
from spotline.core.common.durations import format_duration
from spotline_dev.explain.history import LINK_LABELS, parse_time, summarize
from spotline_dev.explain.story import Story
from spotline_dev.explain.timeline import TimelineEntry, format_entry
from spotline_dev.explain.words import BILLED_LEGEND, billed_words, saving_words


def render_text(story: Story) -> str:
    """The story as on-call reads it: what happened and what to do first, the details after."""
    out = [f"== {story.name}: {story.headline}"]
    took = ""
    started, stopped = parse_time(story.started_at), parse_time(story.stopped_at)
    if started and stopped:
        took = f" ({format_duration((stopped - started).total_seconds())})"
    manifest = story.manifest
    where = f"s3://{manifest['bucket']}/{manifest['key']}" if manifest.get("key") else "unknown"
    version = f" (version {manifest['versionId']})" if manifest.get("versionId") else ""
    job = "/".join(p for p in (story.team, story.job) if p) or "unknown"
    owner = f"owner {story.owner}" if story.owner else None
    details = ", ".join(p for p in (story.strategy, story.instance, owner) if p)
    ran = f"started {story.started_at or '?'}" + (f", stopped {story.stopped_at}{took}" if story.stopped_at else "")
    out += [
        f"  Execution  {story.execution_arn}",
        f"  Status     {story.status}, {ran}",
        f"  Manifest   {where}{version}",
        f"  Job        {job}" + (f" ({details})" if details else ""),
        "",
    ]
    failure = story.failure
    if failure is not None:
        out += [
            "What failed",
            f"  State      {failure.state or 'unknown'}",
            f"  Error      {failure.error or 'none'}",
            f"  Cause      {failure.summary}",
        ]
        if failure.failed_step and not failure.summary.startswith(failure.failed_step):
            out.append(f"  Step       {failure.failed_step} failed with {failure.failed_step_error}")
        if len(failure.problems) > 1:
            out += [f"    - {p.path}: {p.message}" for p in failure.problems]
        out.append("")
    if story.next_step:
        out += ["Next step", f"  {story.next_step}"]

    start = parse_time(story.timeline_start)
    if story.timeline and start:
        out += ["", f"Timeline (T+hh:mm from {story.timeline_start}, when the manifest arrived)"]
        for item in story.timeline:
            entry = TimelineEntry(parse_time(item["at"]), str(item["state"]), str(item["text"]))
            out.append(f"  {format_entry(entry, start)}")

    if story.scoring is not None:
        out += ["", "Scoring", *story.scoring.lines()]
    else:
        out += _training_lines(story)
    if story.other:
        out += ["", "Other results"]
        out += [f"  {key}: {summarize(value)}" for key, value in story.other.items()]
    out += ["", "Links"]
    out += [f"  {LINK_LABELS.get(k, k):<14} {url}" for k, url in story.links.items()]
    out += [f"  {k.capitalize() + ' report':<14} {url}" for k, url in story.reports.items()]
    return "\n".join(out)


def _training_lines(story: Story) -> list[str]:
    out = ["", "Training"]
    if story.attempts:
        width = max(len(a.training_job_name or "-") for a in story.attempts)
        for a in story.attempts:
            out.append(f"  Attempt {a.number}  {a.capacity:<9} {(a.training_job_name or '-'):<{width}}  {a.ending}")
        for move in story.moves:
            reason = f": {move.reason}" if move.reason else ""
            out.append(f"  Moved               to {move.to} at {move.at or '?'} (after attempt {move.after}){reason}")
        out.append(f"  Spot interruptions  {story.spot_interruptions}")
        out.append(f"  On-demand fallback  {story.fallback}")
    else:
        out.append("  No training job recorded in the execution.")
    out.append(f"  Deadline            {story.deadline_note}")
    figures = story.figures
    if figures.get("training_seconds"):
        against = saving_words(
            figures.get("savings_percent"),
            figures.get("on_demand_cost_usd"),
            figures.get("training_plan_seconds"),
            figures.get("on_demand_instance_type"),
        )
        billed = billed_words(
            int(figures.get("billable_seconds") or 0), figures.get("training_plan_seconds"), story.instance_count
        )
        out.append(
            f"  Cost                {format_usd(figures.get('cost_usd', 0))}: "
            f"{format_duration(figures['training_seconds'])} of training, {billed}; {against}"
        )
        out.append(f"                      ({BILLED_LEGEND})")
    return out
