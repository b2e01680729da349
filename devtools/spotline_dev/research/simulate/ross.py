"""ROSS (Bhuyan, Bhatia, Kodialam, Lakshman, "Exploiting Spot Instances for Time-Critical Cloud
Workloads Using Optimal Randomized Strategies", arXiv 2601.14612, INFOCOM 2026) as a peer of the
simulator: a randomized policy with competitive ratio sqrt(K) (K = on-demand / spot price) when
the deadline is loose enough, D/L >= c = (1 + 2 sqrt K) / (1 + sqrt K).

**Source.** The paper's body (its Algorithm 1, proofs and evaluation) could not be read here: only
its abstract, the opening of its introduction and secondary summaries were reachable. What is
built is the algorithm as those summaries give it (three phases: a warm-up while the running
ratio (D - t) / (L - phi(t)) stays above c; at the moment xi1 it reaches c, an on-demand interval
of length delta = (L - phi(xi1)) / (1 + sqrt K) placed at random in a window after xi1; then
spot) with each gap resolved as below. It is a reading, not the authors' code.

**Ambiguities and how they are resolved** (W = remaining work, d = the restart overhead):

1. The end of the window in which the interval is drawn (the summary is cut there): xi1 + W1.
   It is the only end that stays safe with no spot at all and makes delta tight for sqrt(K).
2. The distribution of the interval's start: uniform on [xi1, xi1 + W1 - delta].
3. Inside the interval with spot available: `ross` runs on-demand whatever spot does (the only
   reading under which delta equalises the two extreme adversaries); `ross-hedged` runs spot
   while it is there and on-demand only once spot is missing, then stays on-demand to the
   interval's end.
4. Outside the interval, spot missing: wait (the slack W1 - delta is exactly the wait the window
   allows).
5. The warm-up: "greedy" (spot when available, wait otherwise). Read as spot-else-on-demand it
   would never wait, never reach c, and never inject. The "uniform" warm-up the summaries mention
   is not run.
6. Deadlines tighter than c from the start: xi1 = 0 and the literal delta; the forced rule (10)
   catches the overrun.
7. One injection, then spot (catch-up) to the end; nothing reachable mentions a second one.
8. The paper's model has no restart overhead; the simulator's jobs pay d per start: the ratio is
   (D - t - d) / W, the interval lasts d + delta (start-up, then delta of training).
9. The paper's model loses no work; phi is the checkpointed work and W the declared work not yet
   checkpointed (`View.remaining`), as for the other baselines.
10. The forced phase: on-demand for good at greedy's last safe moment D - W - d (one-way).
11. With work error ROSS plans with the declared work and keeps no margin: it misses, as greedy.
12. Seeds: the draw depends on the run's seed, the job's start, work and deadline; the grid runs
    `GridSpec.seeds` seeds per job, one row each.
13. K = on-demand price / spot price of the job (`--spot-price-ratio`).

Across regions: nothing reachable says how ROSS would use several regions; it runs pinned to each
region (`singleRegion`), not in the across-regions table.
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np

from spotline_dev.research.simulate.model import NEVER, Capacity, Command, Job, View


def critical_ratio(k: float) -> float:
    """c = (1 + 2 sqrt K) / (1 + sqrt K): the running deadline-to-work ratio where ROSS injects."""
    root = math.sqrt(k)
    return (1 + 2 * root) / (1 + root)


def draw(seed: int, start: datetime, job: Job) -> float:
    """The uniform draw in [0, 1) of one run: the same for a seed, a start and a job."""
    keys = [seed, int(start.timestamp()), job.work, job.deadline, job.declared]
    return float(np.random.default_rng(keys).random())


class Ross:
    """ROSS, in the phases warm-up, injection (before, inside, after the interval) and forced."""

    wakes_on_events = True

    def __init__(self, job: Job, u: float, *, hedged: bool = False) -> None:
        if not 0 <= u < 1:
            raise ValueError("the draw must be in [0, 1)")
        self.name = "ross-hedged" if hedged else "ross"
        self.u, self.hedged = u, hedged
        self.k = job.on_demand_price / job.spot_price
        self.c = critical_ratio(self.k)
        self.locked = False
        self.interval: tuple[int, int] | None = None
        """[start, end) of the on-demand interval, in steps, once xi1 is reached."""
        self.on_demand = False
        """In the interval, on on-demand (`ross-hedged`: since spot went missing)."""

    def place(self, t: int, remaining: float, overhead: int) -> tuple[int, int]:
        """xi1 = t: the interval of d + delta, its start uniform on [t, t + W - delta]."""
        delta = remaining / (1 + math.sqrt(self.k))
        start = t + math.floor(self.u * (remaining - delta))
        return start, start + overhead + math.ceil(delta - 1e-9)

    def decide(self, view: View) -> Command:
        job, t = view.job, view.t
        d, remaining = job.overhead, view.remaining
        last_safe = math.ceil(job.deadline - remaining - d - 1e-9)
        if self.locked or t >= last_safe:
            self.locked = True
            return Command("on-demand")
        if self.interval is None:
            xi1 = math.ceil(job.deadline - d - self.c * remaining - 1e-9)  # (D - t - d) / W <= c from here
            if t < xi1:
                return Command("spot", min(xi1, last_safe))
            self.interval = self.place(t, remaining, d)
        begin, end = self.interval
        if t < begin or t >= end:
            wake = begin if t < begin else NEVER
            return Command("spot", min(wake, last_safe))
        capacity: Capacity = "on-demand"
        if self.hedged and not self.on_demand and view.spot_available:
            capacity = "spot"
        self.on_demand = capacity == "on-demand"
        return Command(capacity, min(end, last_safe))


def ross(job: Job, start: datetime, seed: int) -> Ross:
    return Ross(job, draw(seed, start, job))


def ross_hedged(job: Job, start: datetime, seed: int) -> Ross:
    return Ross(job, draw(seed, start, job), hedged=True)


__all__ = ["Ross", "critical_ratio", "draw", "ross", "ross_hedged"]
