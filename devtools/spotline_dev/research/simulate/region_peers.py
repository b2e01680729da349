"""The published multi-region peers of `spotline simulate --regions`: SkyPilot's EAGER_NEXT_REGION
recovery and a SkyNomad-like placement. Both see every region's capacity when they try a launch
(`View.regions_available`), as the paper's simulators do; Spotline does not.

**`eager-next-region`**: SkyPilot's default managed-job recovery as `sky/jobs/recovery_strategy.py`
does it at commit 027bbcdb (L613-671). Spot only, no deadline (misses are reported). A launch is a
pass over the regions cheapest first (equal prices here: the regions' order), the first with
capacity wins; a failed pass sleeps the `common_utils.Backoff` gap (60 s, x1.6, at most 300 s;
the jitter's midpoint) and tries again, 240 passes, then 60 s, and again. After a preemption it
terminates and relaunches. Step 2 of `recover()` would first block the preempted region for
three passes, but its guard tests the *launched* resources' region, which is never None: it never
runs (skypilot-org/skypilot#10021), so the relaunch goes to the cheapest region with capacity,
the preempted one included. `eager-next-region-fixed` runs step 2 as PR #10074 intends (three
passes without the preempted region, then every region again). SkyPilot has no deadline-aware
variant of it.

**`skynomad`**: SkyNomad (arXiv 2601.06520), Algorithm 1 with the artifact code's choices
(andylizf/skynomad-artifact, `unified_cost_model.py`), one decision per 10-minute tick and at
each preemption:

- safety net: on-demand for good in the checkpoint's region at greedy's last safe moment;
- progress value V = Cod (P - p)/(T - t) / (p/t) (paper eq. 8; Cod while nothing is done), at
  least the spot price;
- utilities per hour: idle 0; spot in r: (V (L - d) - Cspot L)/L - (copy time x V + copy price)/L,
  d not paid by the spot instance already running; on-demand in r: V - Cod - copy time x V - copy
  price; no copy term in the checkpoint's region;
- it tries the options above the current one, best first (a spot launch succeeds when r has
  capacity now); while an instance runs, another region or on-demand must beat it by the
  artifact's hysteresis 0.5 + 0.0002 x checkpoint GB + 0.05 V dollars an hour at the V100's
  $3.06 on-demand, 0.16 + 0.0002 GB / 3.06 + 0.05 V here;
- probes: every 2 hours (the paper) it looks at every region it does not run in; a probe that
  finds capacity opens a spot lifetime, one that finds none (or a failed launch) ends it as a
  preemption; its own spot runs are lifetimes too, ended by a preemption or censored when it
  leaves;
- lifetime L: expected remaining spot lifetime at the current age, Nelson-Aalen over the region's
  ended lifetimes up to the longest failure seen, an exponential tail beyond (failures over hours
  observed), capped at 2 hours and at the time left; with no failure seen, the cap.

Simplifications: probes cost nothing here (the paper charges one minute of spot each, about 10 %
of its bill at 13 regions); the artifact's volatility ("burst") factor is left out; the
Nelson-Aalen tail is this module's (the paper does not say); equal prices in every region, so
the price term cannot separate regions, only lifetimes, copies and V do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from spotline_dev.research.simulate.model import HOUR, Capacity, Command, Job, View

GIB = 1 << 30
BACKOFF_INITIAL_SECONDS = 60.0
BACKOFF_MULTIPLIER = 1.6
BACKOFF_MAX_SECONDS = 5 * BACKOFF_INITIAL_SECONDS
"""`sky.utils.common_utils.Backoff`: the first gap, its growth, its ceiling (5 x the first)."""
RECOVERY_PASSES = 3
"""`_launch(max_retry=3)`: the passes of recover()'s step 2, the preempted region blocked."""
MAX_RETRY_PASSES = 240
"""`_MAX_RETRY_CNT`: the passes of one unconstrained `_launch`."""
RETRY_GAP_SECONDS = 60
"""`RETRY_INIT_GAP_SECONDS`: the sleep after a `_launch` that found nothing."""

TICK_SECONDS = 10 * 60
PROBE_SECONDS = 2 * 3600
MAX_LIFETIME_SECONDS = 2 * 3600
V100_ON_DEMAND_USD = 3.06


def _steps(seconds: float, job: Job) -> int:
    return max(1, math.ceil(seconds / job.step_seconds - 1e-9))


class EagerNextRegion:
    """SkyPilot's EAGER_NEXT_REGION (see the module docstring); `blocks_preempted`: PR #10074."""

    wakes_on_events = True

    def __init__(self, regions: int, *, blocks_preempted: bool = False) -> None:
        self.regions, self.blocks_preempted = regions, blocks_preempted
        self.name = "eager-next-region-fixed" if blocks_preempted else "eager-next-region"
        self.launching = False
        self.blocked: int | None = None
        self.passes, self.limit, self.gap = 0, MAX_RETRY_PASSES, BACKOFF_INITIAL_SECONDS
        self.wake = 0
        self.passes_made: list[tuple[int, tuple[int, ...]]] = []
        """Every pass: its step and the regions it tried (tests, reports)."""

    def _launch(self, *, blocked: int | None) -> None:
        self.launching, self.blocked = True, blocked
        self.passes, self.gap = 0, BACKOFF_INITIAL_SECONDS
        self.limit = RECOVERY_PASSES if blocked is not None else MAX_RETRY_PASSES

    def _pass(self, view: View) -> Command:
        tried = tuple(r for r in range(self.regions) if r != self.blocked)
        self.passes_made.append((view.t, tried))
        found = next((r for r in tried if view.regions_available[r]), None)
        if found is not None:
            self.launching = False
            return Command("spot", None, region=found)
        self.passes += 1
        if self.passes < self.limit:
            self.wake = view.t + _steps(self.gap, view.job)
            self.gap = min(self.gap * BACKOFF_MULTIPLIER, BACKOFF_MAX_SECONDS)
        elif self.blocked is not None:  # step 2 found nothing: step 3 at once, every region
            self._launch(blocked=None)
            return self._pass(view)
        else:
            self._launch(blocked=None)
            self.wake = view.t + _steps(RETRY_GAP_SECONDS, view.job)
        return Command("none", self.wake)

    def decide(self, view: View) -> Command:
        if view.capacity == "none" and not self.launching:  # the first launch
            self._launch(blocked=None)
            return self._pass(view)
        if view.phase in ("interrupted", "waiting"):  # preempted (or no capacity after the copy): recover
            self._launch(blocked=view.region if self.blocks_preempted else None)
            return self._pass(view)
        if self.launching:
            return self._pass(view) if view.t >= self.wake else Command("none", self.wake)
        return Command(view.capacity, None)


@dataclass(slots=True)
class Lifetimes:
    """One region's spot lifetimes as SkyNomad observes them, in steps."""

    ended: list[tuple[int, bool]] = field(default_factory=list)
    """(length, ended by a preemption) of each lifetime over; False: censored (it left)."""
    since: int | None = None
    """The start of the lifetime open now."""

    def open(self, t: int) -> None:
        if self.since is None:
            self.since = t

    def close(self, t: int, *, failed: bool) -> None:
        if self.since is not None:
            if failed or t > self.since:  # a lifetime censored as it began tells nothing
                self.ended.append((t - self.since, failed))
            self.since = None

    def expected(self, t: int, cap: float) -> float:
        """Expected remaining lifetime at the open lifetime's age (0 when none is open), at most `cap`."""
        age = 0 if self.since is None else t - self.since
        failures = sorted(length for length, failed in self.ended if failed)
        if not failures:
            return cap
        exposure = sum(length for length, _ in self.ended) + age
        rate = len(failures) / max(exposure, 1)
        cumulative, level, area, x = 0.0, 1.0, 0.0, float(age)
        survival_at_age = 1.0
        for at in sorted(set(failures)):
            if at > x:
                area += level * (at - x)
                x = at
            at_risk = sum(1 for length, _ in self.ended if length >= at) + (self.since is not None and age >= at)
            cumulative += failures.count(at) / at_risk
            level = math.exp(-cumulative)
            if at <= age:
                survival_at_age, area = level, 0.0
        area += level / rate  # the exponential tail beyond the longest failure
        return min(cap, area / survival_at_age)


class SkyNomad:
    """SkyNomad-like placement across regions (see the module docstring)."""

    name = "skynomad"
    wakes_on_events = True

    def __init__(self, regions: int, checkpoint_bytes: int) -> None:
        self.regions = regions
        self.checkpoint_gb = checkpoint_bytes / GIB
        self.lifetimes = [Lifetimes() for _ in range(regions)]
        self.locked, self.net_region = False, 0
        self.running: tuple[int, Capacity] | None = None
        """Where and on what its instance runs, as it launched it."""
        self.wake, self.next_probe = 0, 0
        self.probes = 0
        """Probes made (the paper charges a minute of spot each; not billed here)."""

    def value(self, view: View) -> float:
        """V = Cod (P - p)/(T - t) / (p/t), at least the spot price; Cod while nothing is done."""
        job, t = view.job, view.t
        done = job.declared - view.remaining
        if t <= 0 or done <= 0:
            return job.on_demand_price
        pressure = view.remaining / max(job.deadline - t, 1)
        return max(job.spot_price, job.on_demand_price * pressure / (done / t))

    def _observe(self, view: View, failed: set[int]) -> None:
        """A preemption ends its lifetime; the probes look at every region it does not run in."""
        if self.running is not None and view.phase in ("interrupted", "waiting"):
            region, capacity = self.running
            if capacity == "spot":
                self.lifetimes[region].close(view.t, failed=True)
            self.running = None
        if view.t < self.next_probe:
            return
        self.next_probe = view.t + _steps(PROBE_SECONDS, view.job)
        for r in range(self.regions):
            if (self.running is not None and r == self.running[0]) or r in failed:
                continue
            self.probes += 1
            if view.regions_available[r]:
                self.lifetimes[r].open(view.t)
            else:
                self.lifetimes[r].close(view.t, failed=True)

    def options(self, view: View, v: float) -> list[tuple[float, int, Capacity]]:
        """(utility per hour, region, capacity) of every launch, best first (then region order, spot first)."""
        job = view.job
        hours = job.step_hours
        d, copy = job.overhead * hours, job.copy * hours
        cap = min(MAX_LIFETIME_SECONDS / HOUR, (job.deadline - view.t) * hours)
        out: list[tuple[float, int, Capacity]] = []
        for r in range(self.regions):
            moving = view.checkpointed > 0 and r != view.checkpoint_region
            penalty = copy * v + job.copy_cost if moving else 0.0
            life = max(self.lifetimes[r].expected(view.t, cap / hours) * hours, 1e-9)
            start = 0.0 if self.running == (r, "spot") else d
            out.append((v * max(life - start, 0.0) / life - job.spot_price - penalty / life, r, "spot"))
            out.append((v - job.on_demand_price - penalty, r, "on-demand"))
        return sorted(out, key=lambda o: (-o[0], o[1], o[2] != "spot"))

    def decide(self, view: View) -> Command:
        job, t = view.job, view.t
        preempted = self.running is not None and view.phase in ("interrupted", "waiting")
        if t < self.wake and not preempted and not self.locked:
            return Command(view.capacity, self.wake)
        last_safe = math.ceil(job.deadline - view.remaining - job.overhead - 1e-9)
        if self.locked or t >= last_safe:
            if not self.locked:  # where the checkpoint is (or will be, once the instance saves)
                here = view.checkpointed == 0 or view.checkpoint_region == view.region
                self.locked, self.net_region = True, view.region if here else view.checkpoint_region
            return Command("on-demand", None, region=self.net_region)
        failed: set[int] = set()
        self._observe(view, failed)
        self.wake = min(t + _steps(TICK_SECONDS, job), last_safe)
        v = self.value(view)
        options = self.options(view, v)
        current = next((u for u, r, c in options if (r, c) == self.running), 0.0)
        hysteresis = 0.5 / V100_ON_DEMAND_USD + 0.0002 * self.checkpoint_gb / V100_ON_DEMAND_USD + 0.05 * v
        for utility, region, capacity in options:
            if utility <= max(current, 0.0) or (region, capacity) == self.running:
                break
            elsewhere = self.running is not None and (region != self.running[0] or capacity == "on-demand")
            if elsewhere and utility <= current + hysteresis:
                continue
            if capacity == "spot" and not view.regions_available[region]:
                failed.add(region)
                self.lifetimes[region].close(t, failed=True)  # a failed launch: a virtual preemption
                continue
            self._leave(t)
            if capacity == "spot":
                self.lifetimes[region].close(t, failed=False)
                self.lifetimes[region].open(t)
            self.running = (region, capacity)
            return Command(capacity, self.wake, region=region)
        if self.running is None or current < 0:  # idling (utility 0) beats what runs
            self._leave(t)
            return Command("none", self.wake)
        return Command(self.running[1], self.wake, region=self.running[0])

    def _leave(self, t: int) -> None:
        """Terminating a spot instance to go elsewhere censors its lifetime."""
        if self.running is not None and self.running[1] == "spot":
            self.lifetimes[self.running[0]].close(t, failed=False)
        self.running = None


__all__ = ["EagerNextRegion", "Lifetimes", "SkyNomad"]
