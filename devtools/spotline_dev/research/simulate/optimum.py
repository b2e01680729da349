"""The best any policy could do on a trace.

**The offline optimum** (`optimal_costs`) knows the whole trace: a dynamic program over (time,
progress, mode), vectorized over progress and start offsets, gives the least cost of finishing
by every deadline at once. Knowing the future it never needs to lose work (it stops before a
preemption), so it is a lower bound on the cost of any run that meets its deadline. A deadline
is *feasible* when the optimum can meet it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from spotline_dev.research.simulate.model import Job


def start_capacity(flags: npt.NDArray[np.bool_], overhead: int) -> npt.NDArray[np.bool_]:
    """`[r, b, s]`: capacity in region r of window b for every step of a start-up beginning at s,
    from `flags` (places, batch, length); a start-up of 0 steps still needs capacity in the step
    it trains."""
    places, batch, length = flags.shape
    counts = np.concatenate([np.zeros((places, batch, 1), dtype=np.int64), np.cumsum(flags, axis=2)], axis=2)
    can_start = np.zeros((places, batch, length + 1), dtype=np.bool_)
    starts = np.arange(length + 1)
    span = max(overhead, 1)
    fits = starts + span <= length
    ridx = np.transpose(counts, (2, 0, 1))  # (length + 1, places, batch)
    can_start[:, :, fits] = np.transpose(ridx[starts[fits] + span] - ridx[starts[fits]], (1, 2, 0)) == span
    return can_start


def best_elsewhere(best: npt.NDArray[np.float64], copy_cost: float) -> npt.NDArray[np.float64]:
    """`[r, ...]`: the least of `best` over every region but r (axis 0), plus the copy to r."""
    order = np.sort(best, axis=0)
    least, second = order[0], order[1]
    elsewhere: npt.NDArray[np.float64] = np.where(best == least[None], second[None], least[None]) + copy_cost
    return elsewhere


def optimal_costs(job: Job, available: npt.NDArray[np.bool_], horizon: int | None = None) -> npt.NDArray[np.float64]:
    """The least cost of having finished the job by each step 0..horizon, knowing the trace.

    `available` is one trace window (T,) or a batch of them (B, T); the result is (horizon + 1,)
    or (B, horizon + 1), `inf` where no schedule can finish in time. Read the column of any
    deadline up to `horizon` (default: the job's deadline).

    A forward dynamic program over (time, progress, mode), vectorized over progress and the
    batch. At a step a job is idle (no instance), or on spot or on-demand with an instance past
    its start-up. Moves: stop (free); start spot (needs capacity for the whole start-up) or
    on-demand, arriving `d` steps later ready to train; train a step (on spot only with capacity:
    a spot instance without capacity is gone). Nothing is ever lost: with the trace known,
    stopping before a preemption does as well as any checkpoint, so no run can be cheaper.
    """
    flags = np.asarray(available, dtype=np.bool_)
    one_region = flags[None, :] if flags.ndim == 1 else flags[:, None, :]
    return optimal_costs_across_regions(job, one_region, horizon)


def optimal_costs_across_regions(
    job: Job, available: npt.NDArray[np.bool_], horizon: int | None = None
) -> npt.NDArray[np.float64]:
    """`optimal_costs` when the job may run in any of several regions: `available` is (R, T) or a
    batch (B, R, T); the result (horizon + 1,) or (B, horizon + 1).

    The same dynamic program with the mode per region (idle with the checkpoint there, spot or
    on-demand there). A start where the checkpoint is takes the start-up `d`; a start in another
    region first copies the checkpoint (`job.copy` steps, `job.copy_cost`), so it arrives
    `copy + d` steps later and a spot one needs capacity for the start-up after the copy. A job
    with no progress yet has nothing to copy (at progress 0 every region's idle state costs 0).
    """
    flags = np.asarray(available, dtype=np.bool_)
    single = flags.ndim == 2
    if single:
        flags = flags[None]
    batch, places, length = flags.shape
    flags = np.ascontiguousarray(flags.transpose(1, 0, 2))  # (places, batch, length)
    steps = job.deadline if horizon is None else horizon
    if length < steps:
        raise ValueError(f"the trace window has {length} steps, the horizon needs {steps}")
    work, d, k = job.work, job.overhead, job.copy
    spot_step, od_step = job.spot_price * job.step_hours, job.on_demand_price * job.step_hours
    spot_start, od_start = job.billed_start * spot_step, job.billed_start * od_step
    inf = np.inf
    idle = np.full((places, batch, work + 1), inf)
    idle[:, :, 0] = 0.0
    spot = np.full_like(idle, inf)
    ondemand = np.full_like(idle, inf)
    slots = d + k + 1
    arriving_spot = np.full((slots, places, batch, work + 1), inf)
    arriving_od = np.full_like(arriving_spot, inf)
    can_start = start_capacity(flags, d)
    done = np.full((batch, steps + 1), inf)
    for t in range(steps + 1):
        slot = t % slots
        np.minimum(spot, arriving_spot[slot], out=spot)
        np.minimum(ondemand, arriving_od[slot], out=ondemand)
        arriving_spot[slot] = inf
        arriving_od[slot] = inf
        if t < steps:
            gone = ~flags[:, :, t]
            if gone.any():
                idle[gone] = np.minimum(idle[gone], spot[gone])
                spot[gone] = inf
        best = np.minimum(np.minimum(idle, spot), ondemand)
        done[:, t] = best[:, :, work].min(axis=0)
        if t == steps:
            break
        if places > 1:  # the best state elsewhere, plus the copy (sorted: the least and the second least)
            elsewhere = best_elsewhere(best, job.copy_cost)
        for r in range(places):
            moves = [(d, best[r])] + ([(k + d, elsewhere[r])] if places > 1 else [])
            for delay, source in moves:
                begin = t + delay - d  # the start-up begins after any copy
                if begin >= length:
                    continue
                starters = can_start[r, :, begin]
                if delay == 0:  # lands now: trains in this very step
                    spot[r][starters] = np.minimum(spot[r][starters], source[starters] + spot_start)
                    ondemand[r] = np.minimum(ondemand[r], source + od_start)
                    continue
                target = (t + delay) % slots
                if starters.any():
                    landing = arriving_spot[target, r]
                    landing[starters] = np.minimum(landing[starters], source[starters] + spot_start)
                np.minimum(arriving_od[target, r], source + od_start, out=arriving_od[target, r])
        next_spot = np.full_like(spot, inf)
        next_spot[:, :, 1:] = spot[:, :, :-1] + spot_step
        next_od = np.full_like(ondemand, inf)
        next_od[:, :, 1:] = ondemand[:, :, :-1] + od_step
        idle, spot, ondemand = best, next_spot, next_od
    result: npt.NDArray[np.float64] = np.minimum.accumulate(done, axis=1)
    return result[0] if single else result
