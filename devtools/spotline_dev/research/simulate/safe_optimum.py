"""The cheapest schedule that never risks the deadline: the safe optimum.

The hindsight optimum (`optimal_costs`) may bet on spot at any moment because it knows the trace.
A schedule is *safe* when at every step, before anything happens in it, an on-demand restart
from the last checkpoint, started now where the checkpoint is, would still finish by the
deadline: with l = t - p (time not turned into progress), u the training since the last save,
s = D - W the slack and d the restart, `l + u <= s - d` off on-demand, and on on-demand it
finishes in time. `safe_costs` is the least cost, knowing the trace, of a safe schedule that
finishes by the deadline. A policy that is safe at every moment never pays less on the same
trace, so it bounds every policy that never risks a deadline; a policy that gambles and wins may
still pay less on one job.

Conventions are those of `optimal_costs_across_regions` (costs, start-ups, the step order, the
credit of the step before a preemption); the safety check comes before that credit. A stop the
workflow asks for saves; a preemption loses the training since the last save. An attempt saves
after `first_interval` steps of training, then every `job.checkpoint`. A job without checkpoints
(`job.checkpoint` None) still saves when it stops, and a preemption loses everything since its
attempt landed.

Since l never decreases along a schedule, the program runs over (time, l) with l in 0..s. A spot
state at l is *free* when no u it can reach is unsafe; otherwise (a band at most one checkpoint
interval wide below `s - d`) it also tracks j, the training since the attempt landed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from spotline_dev.research.simulate.model import Job
from spotline_dev.research.simulate.optimum import best_elsewhere, start_capacity

Floats = npt.NDArray[np.float64]


def unsaved(steps: int, first: int | None, every: int | None) -> int:
    """The training not yet saved after `steps` of training in one attempt: the first save after
    `first` steps (None: never), then one every `every` (None: no more)."""
    if first is None or steps < first:
        return steps
    return steps - first if every is None else (steps - first) % every


def _band(limit: int, first: int | None, every: int | None) -> tuple[int, npt.NDArray[np.bool_]]:
    """The band of spot states that track j: its lowest l, and `reach[l - lowest, j]`, whether an
    attempt landed at l can still be training safely after j steps."""
    widest = None if first is None or every is None else max(first, every) - 1  # the most u reaches
    lowest = 0 if widest is None else max(0, limit - widest + 1)
    if limit < lowest:
        return lowest, np.zeros((0, 1), dtype=np.bool_)
    levels = np.arange(lowest, limit + 1)
    columns = [np.ones(len(levels), dtype=np.bool_)]
    while columns[-1].any():
        j = len(columns)
        columns.append(columns[-1] & (levels + unsaved(j, first, every) <= limit))
    return lowest, np.stack(columns[:-1], axis=1)


def safe_costs(
    job: Job, windows: npt.NDArray[np.bool_], *, first_interval: int | None = None, safe: bool = True
) -> Floats:
    """The safe optimum of the job on one trace window (T,) or a batch (B, T): a 0-d array or (B,),
    `inf` where no schedule finishes by `job.deadline`. `safe=False` drops the safety check and
    gives the hindsight optimum at the deadline (`optimal_costs(...)[job.deadline]`)."""
    flags = np.asarray(windows, dtype=np.bool_)
    one_region = flags[None, :] if flags.ndim == 1 else flags[:, None, :]
    return safe_costs_across_regions(job, one_region, first_interval=first_interval, safe=safe)


def safe_costs_across_regions(
    job: Job, windows: npt.NDArray[np.bool_], *, first_interval: int | None = None, safe: bool = True
) -> Floats:
    """`safe_costs` when the job may run in any of several regions: `windows` is (R, T) or a
    batch (B, R, T), with the moves and copies of `optimal_costs_across_regions`. The on-demand
    fallback is where the checkpoint is, so the condition is the same in every region."""
    flags = np.asarray(windows, dtype=np.bool_)
    single = flags.ndim == 2
    if single:
        flags = flags[None]
    batch, places, length = flags.shape
    flags = np.ascontiguousarray(flags.transpose(1, 0, 2))  # (places, batch, length)
    work, deadline, d, k = job.work, job.deadline, job.overhead, job.copy
    if length < deadline:
        raise ValueError(f"the trace window has {length} steps, the deadline needs {deadline}")
    if first_interval is not None and first_interval <= 0:
        raise ValueError("the first checkpoint comes after a positive number of steps")
    inf = np.inf
    finished = np.full(batch, inf)
    slack = deadline - work
    if slack < d:  # not even on-demand from the start finishes
        return finished.reshape(()) if single else finished
    limit = slack - d if safe else slack  # the largest l an idle or spot state may have
    first = job.checkpoint if first_interval is None else first_interval
    if safe:
        lowest, reach = _band(limit, first, job.checkpoint)
    else:
        lowest, reach = limit + 1, np.zeros((0, 1), dtype=np.bool_)
    levels = slack + 1
    spot_step, od_step = job.spot_price * job.step_hours, job.on_demand_price * job.step_hours
    spot_start, od_start = job.billed_start * spot_step, job.billed_start * od_step
    idle = np.full((places, batch, levels), inf)
    idle[:, :, 0] = 0.0
    spot = np.full_like(idle, inf)  # free spot states: l < lowest
    ondemand = np.full_like(idle, inf)
    best = np.full_like(idle, inf)
    width = reach.shape[0]
    band = np.full((places, batch, width, reach.shape[1]), inf)  # [.., l - lowest, j]
    top = lowest + width  # band levels are lowest..top - 1
    slots = d + k + 1
    arriving_spot = np.full((slots, places, batch, levels), inf)
    arriving_od = np.full_like(arriving_spot, inf)
    can_start = start_capacity(flags, d)

    def land(slot: int, lo: int, hi: int) -> None:
        """Merge the start-ups landing now (at live levels lo..hi - 1)."""
        np.minimum(ondemand[..., lo:hi], arriving_od[slot, ..., lo:hi], out=ondemand[..., lo:hi])
        free = min(hi, lowest)
        if lo < free:
            np.minimum(spot[..., lo:free], arriving_spot[slot, ..., lo:free], out=spot[..., lo:free])
        if width and lowest < hi and lo < top:
            np.minimum(band[..., 0], arriving_spot[slot, ..., lowest:top], out=band[..., 0])
        arriving_spot[slot, ..., lo:hi] = inf
        arriving_od[slot, ..., lo:hi] = inf

    for t in range(deadline + 1):
        lo, hi = max(0, t - work), min(t, slack) + 1  # live levels: progress in 0..W
        land(t % slots, lo, hi)
        banded = width > 0 and lowest < hi and lo < top
        if t < deadline and not flags[:, :, t].all():  # no capacity: spot stops, keeping what it trained
            gone = ~flags[:, :, t, None]
            free = min(hi, lowest)
            if lo < free:
                live = idle[..., lo:free]
                live[...] = np.where(gone, np.minimum(live, spot[..., lo:free]), live)
                spot[..., lo:free] = np.where(gone, inf, spot[..., lo:free])
            if banded:
                live = idle[..., lowest:top]
                live[...] = np.where(gone, np.minimum(live, band.min(axis=3)), live)
                band = np.where(gone[..., None], inf, band)
        now = best[..., lo:hi]
        np.minimum(idle[..., lo:hi], spot[..., lo:hi], out=now)
        np.minimum(now, ondemand[..., lo:hi], out=now)
        if banded:
            np.minimum(best[..., lowest:top], band.min(axis=3), out=best[..., lowest:top])
        if t >= work:  # progress W sits at l = t - W
            np.minimum(finished, best[:, :, t - work].min(axis=0), out=finished)
        if t == deadline:
            break
        moves = [(d, now)]
        if places > 1:
            moves.append((k + d, best_elsewhere(now, job.copy_cost)))
        for delay, source in moves:
            begin = t + delay - d  # the start-up begins after any copy
            first_level, last_level = lo + delay, min(hi + delay, levels)  # landing at l + delay
            if begin >= length or first_level >= last_level:
                continue
            target = (t + delay) % slots
            od_land = arriving_od[target, ..., first_level:last_level]
            np.minimum(od_land, source[..., : last_level - first_level] + od_start, out=od_land)
            spot_last = min(last_level, limit + 1)
            if spot_last > first_level:
                fresh = source[..., : spot_last - first_level] + spot_start
                fresh[~can_start[:, :, begin]] = inf
                spot_land = arriving_spot[target, ..., first_level:spot_last]
                np.minimum(spot_land, fresh, out=spot_land)
        if d == 0:  # lands now: trains in this very step
            land(t % slots, lo, hi)
        done_next = t + 1 - work  # an attempt reaching W at t + 1 may finish past the band's bound
        if banded and lowest <= done_next < top:
            np.minimum(finished, band[:, :, done_next - lowest].min(axis=(0, 2)) + spot_step, out=finished)
        free = min(hi, lowest)
        spot[..., lo:free] += spot_step
        ondemand[..., lo:hi] += od_step
        if banded:
            trained = np.full_like(band, inf)
            trained[..., 1:] = np.where(reach[:, 1:], band[..., :-1] + spot_step, inf)
            band = trained
        safe_top = min(hi, limit)  # idle one more step: l + 1, still safe
        idle[..., lo] = inf
        idle[..., lo + 1 : safe_top + 1] = best[..., lo:safe_top]
    return finished.reshape(()) if single else finished


def safe_costs_by_deadline(
    job: Job, windows: npt.NDArray[np.bool_], deadlines: Sequence[int], *, first_interval: int | None = None
) -> Floats:
    """`safe_costs_across_regions` of the job at each deadline, at once: `windows` (R, T) or
    (B, R, T), T at least the latest deadline; the result (len(deadlines),) or (B, len(deadlines)).

    Faster, same numbers. A state at l whose every possible u is safe (l at most `s - d` less the
    largest u) costs what it costs without the check, whatever the deadline, since l never
    decreases: one unchecked program over every l serves all deadlines. Each deadline adds its
    strip, the `d` + largest-u levels above that, which takes its inflows from the shared program
    (a start, or one more step idle). `job.deadline` is not used. Without periodic checkpoints, with
    a save every step or with no restart time, it runs one program per deadline."""
    flags = np.asarray(windows, dtype=np.bool_)
    single = flags.ndim == 2
    if single:
        flags = flags[None]
    first = job.checkpoint if first_interval is None else first_interval
    every = job.checkpoint
    if first is None or every is None or max(first, every) == 1 or job.overhead == 0 or not deadlines:
        each = [
            safe_costs_across_regions(replace(job, deadline=D), flags, first_interval=first_interval) for D in deadlines
        ]
        stacked = np.stack(each, axis=-1) if each else np.full((flags.shape[0], 0), np.inf)
        return stacked[0] if single else stacked
    if first_interval is not None and first_interval <= 0:
        raise ValueError("the first checkpoint comes after a positive number of steps")
    batch, places, length = flags.shape
    flags = np.ascontiguousarray(flags.transpose(1, 0, 2))  # (places, batch, length)
    ends = np.asarray(deadlines, dtype=np.int64)
    last = int(ends.max())
    if length < last:
        raise ValueError(f"the trace window has {length} steps, the deadline needs {last}")
    work, d, k = job.work, job.overhead, job.copy
    inf = np.inf
    count = len(ends)
    finished = np.full((batch, count), inf)
    slack = ends - work
    feasible = slack >= d
    if not feasible.any():
        return finished[0] if single else finished
    widest = max(first, every) - 1  # the most u an attempt reaches
    free_top = slack - d - widest  # per deadline: the highest level free of u
    base = free_top + 1  # per deadline: the strip's lowest level
    strip = d + widest  # the strip's levels: base .. slack
    _, reach = _band(widest - 1, first, every)  # [strip level, j], the band being the strip's first `widest`
    levels = max(int(slack.max()), 0) + 1
    spot_step, od_step = job.spot_price * job.step_hours, job.on_demand_price * job.step_hours
    spot_start, od_start = job.billed_start * spot_step, job.billed_start * od_step
    slots = d + k + 1
    can_start = start_capacity(flags, d)
    # the program shared by every deadline: no check, every level
    idle = np.full((places, batch, levels), inf)
    idle[:, :, 0] = 0.0
    spot = np.full_like(idle, inf)
    ondemand = np.full_like(idle, inf)
    best = np.full_like(idle, inf)
    arriving_spot = np.full((slots, places, batch, levels), inf)
    arriving_od = np.full_like(arriving_spot, inf)
    # each deadline's strip: [.., deadline, level - base]
    s_idle = np.full((places, batch, count, strip), inf)
    starts_in_strip = np.flatnonzero(feasible & (base <= 0))  # l = 0 is in the strip
    s_idle[:, :, starts_in_strip, -base[starts_in_strip]] = 0.0
    s_od = np.full_like(s_idle, inf)
    s_best = np.full_like(s_idle, inf)
    band = np.full((places, batch, count, widest, reach.shape[1]), inf)
    s_arriving_spot = np.full((slots, places, batch, count, strip), inf)
    s_arriving_od = np.full_like(s_arriving_spot, inf)
    every_deadline = np.arange(count)
    position = np.arange(strip)
    delays = [d] + ([k + d] if places > 1 else [])
    inflows = []  # per delay: where a landing at each strip level starts from
    for delay in delays:
        source = base[:, None] + position[None, :] - delay  # (deadlines, strip): the level it starts at
        shared = position[None, :] < delay
        inflows.append(
            (delay, shared, shared & (source >= 0), np.clip(source, 0, levels - 1), np.maximum(position - delay, 0))
        )
    may_spot = position < widest  # spot lands at l <= s - d
    for t in range(last + 1):
        lo, hi = max(0, t - work), min(t, levels - 1) + 1
        slot = t % slots
        np.minimum(ondemand[..., lo:hi], arriving_od[slot, ..., lo:hi], out=ondemand[..., lo:hi])
        np.minimum(spot[..., lo:hi], arriving_spot[slot, ..., lo:hi], out=spot[..., lo:hi])
        arriving_spot[slot, ..., lo:hi] = inf
        arriving_od[slot, ..., lo:hi] = inf
        np.minimum(s_od, s_arriving_od[slot], out=s_od)
        np.minimum(band[..., 0], s_arriving_spot[slot, ..., :widest], out=band[..., 0])
        band_best = band.min(axis=4)
        s_arriving_spot[slot] = inf
        s_arriving_od[slot] = inf
        if t < last and not flags[:, :, t].all():  # no capacity: spot stops, keeping what it trained
            gone = ~flags[:, :, t, None]
            live = idle[..., lo:hi]
            live[...] = np.where(gone, np.minimum(live, spot[..., lo:hi]), live)
            spot[..., lo:hi] = np.where(gone, inf, spot[..., lo:hi])
            gone = gone[..., None]
            s_live = s_idle[..., :widest]
            s_live[...] = np.where(gone, np.minimum(s_live, band_best), s_live)
            band_best = np.where(gone, inf, band_best)
            np.copyto(band, inf, where=gone[..., None])
        now = best[..., lo:hi]
        np.minimum(idle[..., lo:hi], spot[..., lo:hi], out=now)
        np.minimum(now, ondemand[..., lo:hi], out=now)
        np.minimum(s_idle, s_od, out=s_best)
        np.minimum(s_best[..., :widest], band_best, out=s_best[..., :widest])
        if t >= work:  # progress W sits at l = t - W: in the shared levels or in the strip
            level = t - work
            at = np.clip(level - base, 0, strip - 1)
            from_strip = s_best[:, :, every_deadline, at].min(axis=0)
            from_shared = best[:, :, min(level, levels - 1)].min(axis=0)[:, None]
            done = np.where(level <= free_top, from_shared, np.where(level <= slack, from_strip, inf))
            np.minimum(finished, done, out=finished)
        if t == last:
            break
        sources = [(best, s_best)]
        if places > 1:
            elsewhere = np.full_like(best, inf)
            elsewhere[..., lo:hi] = best_elsewhere(best[..., lo:hi], job.copy_cost)
            sources.append((elsewhere, best_elsewhere(s_best, job.copy_cost)))
        for (delay, from_shared_levels, valid, shared_at, strip_at), (source, s_source) in zip(
            inflows, sources, strict=True
        ):
            begin = t + delay - d  # the start-up begins after any copy
            first_level, last_level = lo + delay, min(hi + delay, levels)
            if begin >= length:
                continue
            target = (t + delay) % slots
            starters = can_start[:, :, begin, None]
            if first_level < last_level:
                od_land = arriving_od[target, ..., first_level:last_level]
                np.minimum(od_land, source[..., lo : lo + last_level - first_level] + od_start, out=od_land)
                fresh = source[..., lo : lo + last_level - first_level] + spot_start
                spot_land = arriving_spot[target, ..., first_level:last_level]
                np.minimum(spot_land, np.where(starters, fresh, inf), out=spot_land)
            landing = np.where(
                from_shared_levels, np.where(valid, source[..., shared_at], inf), s_source[..., strip_at]
            )
            np.minimum(s_arriving_od[target], landing + od_start, out=s_arriving_od[target])
            spot_ok = starters[..., None] & may_spot
            np.minimum(
                s_arriving_spot[target], np.where(spot_ok, landing + spot_start, inf), out=s_arriving_spot[target]
            )
        done_next = t + 1 - work  # an attempt reaching W at t + 1 may finish past the band's bound
        ending = (free_top < done_next) & (done_next <= slack - d) & feasible
        if ending.any():
            at = np.clip(done_next - base, 0, widest - 1)
            last_step = band[:, :, every_deadline, at].min(axis=(0, 3)) + spot_step
            np.minimum(finished, np.where(ending, last_step, inf), out=finished)
        spot[..., lo:hi] += spot_step
        ondemand[..., lo:hi] += od_step
        s_od += od_step
        band[..., 1:] = band[..., :-1] + spot_step
        band[..., 0] = inf
        np.copyto(band, inf, where=~reach)
        top = min(hi, levels - 1)
        idle[..., lo] = inf
        idle[..., lo + 1 : top + 1] = best[..., lo:top]
        s_idle[..., 1:widest] = s_best[..., : widest - 1]
        s_idle[..., 0] = np.where(free_top >= 0, best[..., np.clip(free_top, 0, levels - 1)], inf)
    finished[:, ~feasible] = inf
    return finished[0] if single else finished
