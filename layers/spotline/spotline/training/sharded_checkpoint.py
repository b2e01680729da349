"""Checkpointing for distributed training where every rank writes a shard (FSDP, PyTorch DCP).

`ShardedCheckpointer` keeps the contract of `Checkpointer` (intervals, SIGTERM, progress.json,
atomic writes, standard library only, Python 3.11+) for many writers::

    ckpt = ShardedCheckpointer(total_steps=N, save_shard=save, load_shard=load,
                               barrier=dist.barrier, all_reduce_any=any_rank)
    state, start = ckpt.restore()                  # every rank: (None, 0) when nothing is complete
    for step in range(start, N):
        ...                                        # train one step
        if ckpt.step_done(step + 1):               # the same answer on every rank
            sys.exit(0)
    ckpt.save_now(N)

Every call of `restore`, `step_done` and `save_now` is collective: every rank makes it, with the
same step. `rank` and `world_size` default to $RANK and $WORLD_SIZE (set by torchrun).

Layout of a step, `checkpoint-<step>/` (a directory):
- `shard-<rank>-of-<world>`: the rank's shard (a file or a directory, whatever `save_shard` writes),
  written under a temporary name, fsynced and renamed into place. With `reshardable=True` there is
  no such entry: `save_shard` gets the step directory itself, where PyTorch DCP writes every rank's
  `__<rank>_0.distcp` and rank 0's `.metadata`.
- `done/shard-<rank>-of-<world>`: the rank's marker, written (atomically) once its shard is on disk:
  {"step", "rank", "world", "reshardable", "job"} ("job": $TRAINING_JOB_NAME, which SageMaker sets).
A step is complete when the markers of ranks 0 .. world-1 are all there, agree on world, format
and job (shards of two attempts never mix), and, without `reshardable`, every shard is there too.

After its marker each rank waits at `barrier()`; then rank 0 writes `progress.json` as
`Checkpointer` does, with `"shards": world` and `"reshardable"` added. On SageMaker every
instance has its own /opt/ml/checkpoints, synced to the same S3 prefix asynchronously, so the
barrier only says every shard is on its own instance's disk: Spotline's reader of progress.json
(spotline.aws.state.progress) checks the markers in S3 before it trusts the step. At the start of a
job SageMaker copies the whole prefix to every instance, so each rank sees every shard there.

`restore()` resumes the newest complete step; a newer incomplete one (a node killed mid-save, an
upload not finished) is skipped with a warning naming what is missing. A step written by another
number of ranks is refused (ValueError) unless both it and this run are `reshardable`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from spotline.training.checkpoint import _TEMP_MARK, PREFIX, Checkpointer, _fsync_dir, _fsync_tree, _remove

RANK_ENV, WORLD_SIZE_ENV, LOCAL_RANK_ENV = "RANK", "WORLD_SIZE", "LOCAL_RANK"  # set by torchrun
JOB_ENV = "TRAINING_JOB_NAME"  # set by SageMaker in the training container
DONE_DIR = "done"
_SHARD = re.compile(r"shard-(\d+)-of-(\d+)")

log = logging.getLogger(__name__)

T = TypeVar("T")


def shard_name(rank: int, world: int) -> str:
    return f"shard-{rank}-of-{world}"


@dataclass(frozen=True)
class StepShards:
    """What a step directory holds: `world` is the number of ranks of a complete set (None when
    incomplete); `problems` says what is missing or wrong."""

    world: int | None
    reshardable: bool
    problems: tuple[str, ...]


class ShardedCheckpointer(Checkpointer[T]):
    """Every rank saves its shard through `save_shard(path)` and restores through `load_shard(path)`.

    `barrier()`: waits for every rank (torch.distributed.barrier). `all_reduce_any(flag) -> bool`:
    True on every rank when any rank passed True (an all-reduce with MAX); `step_done` uses it so
    every rank decides the same save at the same step: a rank that saves while another trains on
    waits at the barrier for ever. Both are required when world_size > 1.
    `reshardable`: the shards are a format that loads into another number of ranks (PyTorch DCP);
    `save_shard` and `load_shard` then get the step directory, not a shard path.
    `local_rank` (default $LOCAL_RANK, else `rank`): rank 0 of each instance deletes old steps.
    The rest as `Checkpointer` (directory, intervals, keep, clock, handle_sigterm).
    """

    def __init__(
        self,
        *,
        total_steps: int,
        save_shard: Callable[[Path], object],
        load_shard: Callable[[Path], T],
        barrier: Callable[[], object] | None = None,
        all_reduce_any: Callable[[bool], bool] | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        local_rank: int | None = None,
        reshardable: bool = False,
        directory: str | os.PathLike[str] | None = None,
        interval_minutes: float | None = None,
        first_interval_minutes: float | None = None,
        keep: int = 2,
        clock: Callable[[], float] = time.monotonic,
        handle_sigterm: bool = True,
    ) -> None:
        world = _from_env(world_size, WORLD_SIZE_ENV, 1)
        here = _from_env(rank, RANK_ENV, 0)
        if world < 1 or not 0 <= here < world:
            raise ValueError(f"rank {here} of world_size {world}: need world_size >= 1 and 0 <= rank < world_size")
        if world > 1 and (barrier is None or all_reduce_any is None):
            raise ValueError(
                f"world_size is {world}: pass barrier= and all_reduce_any= (every rank must save at the same step)"
            )
        super().__init__(
            total_steps=total_steps,
            save=save_shard,
            load=load_shard,
            directory=directory,
            interval_minutes=interval_minutes,
            first_interval_minutes=first_interval_minutes,
            keep=keep,
            clock=clock,
            handle_sigterm=handle_sigterm,
        )
        self.rank, self.world_size, self.reshardable = here, world, reshardable
        self.local_rank = _from_env(local_rank, LOCAL_RANK_ENV, here)
        self._barrier = barrier or (lambda: None)
        self._any = all_reduce_any or (lambda flag: flag)
        self._saved_step: int | None = None  # the step this run last saved or restored (the same on every rank)
        self.job = os.environ.get(JOB_ENV, "").strip()

    # -- the training loop's calls (collective) ------------------------------------------------------

    def restore(self) -> tuple[T | None, int]:
        """(state, steps completed) from the newest complete step, or (None, 0); then the barrier.

        Only complete steps count; the files decide, so every rank picks the same step (SageMaker
        restores the same prefix to every instance). A shard that fails to load raises: falling
        back on one rank alone would resume the ranks at different steps.
        """
        self._remove_temporaries()
        incomplete: list[Path] = []
        for step, path in reversed(self._checkpoints()):
            found = self.inspect(path)
            if found.world is None:
                log.warning("%s is incomplete (%s): not resumed", path, "; ".join(found.problems))
                incomplete.append(path)
                continue
            self._check_compatible(path, found)
            target = path if self.reshardable else path / shard_name(self.rank, found.world)
            state = self._load(target)
            log.info("rank %d restored step %d of %d from %s", self.rank, step, self.total_steps, target)
            self._restored(step, incomplete)
            return state, step
        log.info("no complete checkpoint in %s: starting at step 0", self.directory)
        self._restored(None, incomplete)
        return None, 0

    def step_done(self, step: int) -> bool:
        """Call after each step on every rank. Saves when any rank's interval has passed or any rank
        got SIGTERM (agreed through `all_reduce_any`); returns True on every rank, after saving, when
        some rank got SIGTERM: every rank should exit now."""
        due = self.interval_seconds if self._saved_since_resume else self.first_interval_seconds
        local = self._stop_requested or self._clock() - self._last_save_at >= due
        if not self._any(local):
            return False
        stop = self._any(self._stop_requested)
        self.save_now(step)
        if stop:
            log.info("stop requested (SIGTERM): saved step %d of %d; exit now", step, self.total_steps)
        return stop

    def save_now(self, step: int) -> Path:
        """Every rank writes its shard and marker of `step`; after the barrier rank 0 points
        progress.json at the step. A step this run already saved (or restored) is not written again."""
        if step < 0:
            raise ValueError(f"step must be >= 0, not {step}")
        target = self.directory / f"{PREFIX}{step}"
        if self._saved_step != step:
            self._write_shard(target, step)
        self._barrier()
        if self.rank == 0:
            self._write_progress(step, {"shards": self.world_size, "reshardable": self.reshardable})
            log.info("saved step %d of %d to %s (%d shards)", step, self.total_steps, target, self.world_size)
        self._saved_step = step
        self._last_save_at = self._clock()
        self._saved_since_resume = True
        if self.local_rank == 0:
            self._prune(step)
        return target

    def __enter__(self) -> ShardedCheckpointer[T]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # -- inside ---------------------------------------------------------------------------------------

    def inspect(self, step_dir: Path) -> StepShards:
        """Whether `step_dir` holds a complete set of shards (see the module's docstring)."""
        markers: dict[int, dict[int, dict[str, object]]] = {}  # world -> rank -> marker
        done = step_dir / DONE_DIR
        for path in _entries(done):
            if (m := _SHARD.fullmatch(path.name)) and (marker := _read_marker(path)) is not None:
                markers.setdefault(int(m.group(2)), {})[int(m.group(1))] = marker
        if not markers:
            return StepShards(None, False, (f"no marker in {DONE_DIR}/",))
        problems: list[str] = []
        for world in sorted(markers, key=lambda w: (len(markers[w]) / w, w), reverse=True):
            found = markers[world]
            missing = [shard_name(r, world) for r in range(world) if r not in found]
            formats = {bool(m.get("reshardable")) for m in found.values()}
            jobs = {str(m.get("job", "")) for m in found.values()}
            if missing:
                problems.append(f"missing {', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")
            elif len(jobs) > 1:
                problems.append(f"shards of {world} ranks from different jobs ({', '.join(sorted(jobs))})")
            elif len(formats) > 1:
                problems.append(f"shards of {world} ranks in both formats (reshardable and not)")
            elif not (reshardable := formats.pop()) and (
                absent := [shard_name(r, world) for r in range(world) if not (step_dir / shard_name(r, world)).exists()]
            ):
                problems.append(f"marked but absent: {', '.join(absent[:8])}")
            else:
                return StepShards(world, reshardable, ())
        return StepShards(None, False, tuple(problems))

    def _restored(self, step: int | None, incomplete: list[Path]) -> None:
        """Training goes on from `step`: the incomplete steps after it are dropped on this instance
        (a later save of the same step must not meet an earlier attempt's shards), then the barrier."""
        if self.local_rank == 0:
            for path in incomplete:
                _remove(path)
        self._start_at(step)
        self._saved_step = step
        self._barrier()

    def _check_compatible(self, path: Path, found: StepShards) -> None:
        if found.reshardable != self.reshardable:
            written = "reshardable (the step directory)" if found.reshardable else "one shard per rank"
            raise ValueError(
                f"{path} was written as {written}; this run has reshardable={self.reshardable}: "
                "save and restore with the same format"
            )
        if found.world != self.world_size and not self.reshardable:
            raise ValueError(
                f"{path} was written by {found.world} ranks and this job has {self.world_size}: "
                f"resume with {found.world} ranks, or save in a format that reshards "
                "(PyTorch DCP, reshardable=True)"
            )

    def _write_shard(self, target: Path, step: int) -> None:
        name = shard_name(self.rank, self.world_size)
        done = target / DONE_DIR
        done.mkdir(parents=True, exist_ok=True)
        marker = done / name
        _remove(marker)  # an earlier attempt's marker never vouches for this attempt's shard
        _fsync_dir(done)
        if self.reshardable:
            self._save(target)  # e.g. dcp.save(..., checkpoint_id=target): its writer fsyncs its files
        else:
            temporary = target / f".{name}{_TEMP_MARK}{os.getpid()}"
            _remove(temporary)
            try:
                self._save(temporary)
                if not temporary.exists():
                    raise RuntimeError(f"the save callback wrote nothing at {temporary}")
                _fsync_tree(temporary)
                _remove(target / name)  # a directory is not renamed over another: no marker covers it now
                os.replace(temporary, target / name)
            except BaseException:
                _remove(temporary)
                raise
        _fsync_dir(target)
        body = {"step": step, "rank": self.rank, "world": self.world_size, "reshardable": self.reshardable}
        _write_atomically(marker, json.dumps({**body, "job": self.job}) + "\n")

    def _checkpoints(self) -> list[tuple[int, Path]]:
        """Step directories, oldest first (complete or not: `inspect` says)."""
        return [(step, path) for step, path in super()._checkpoints() if path.is_dir()]

    def _remove_temporaries(self) -> None:
        """A killed save's leftovers, in the directory, its steps and their markers."""
        places = [self.directory]
        for _, path in self._checkpoints():
            places += [path, path / DONE_DIR]
        for place in places:
            for path in _entries(place):
                if path.name.startswith(".") and _TEMP_MARK in path.name:
                    _remove(path)


def _from_env(given: int | None, name: str, default: int) -> int:
    if given is not None:
        return given
    text = os.environ.get(name, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        raise ValueError(f"${name}={text!r} is not an integer") from None


def _entries(directory: Path) -> list[Path]:
    """The directory's entries; none when it is missing (another rank may be deleting it)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        return list(directory.iterdir())
    return []


def _read_marker(path: Path) -> dict[str, object] | None:
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}{_TEMP_MARK}{os.getpid()}")
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        _remove(temporary)
        raise
    _fsync_dir(path.parent)
