"""Checkpointing for training code that runs on spot capacity (the training side of Spotline).

Spotline decides on deadlines from `progress.json`, which this helper keeps beside the checkpoints
in the SageMaker checkpoint directory (synced to the job's CheckpointConfig.S3Uri). It saves every
`interval_minutes` (the first time after `first_interval_minutes` when Spotline asks for an early
first measurement), once more when SageMaker sends SIGTERM (spot interruption or stop: 120 s before
SIGKILL), and restores at start. The framework-specific part is two callbacks, so this module needs
nothing beyond the standard library, and it runs on Python 3.11+ (training images lag the Lambda runtime)::

    ckpt = Checkpointer(total_steps=N, save=lambda p: torch.save(state(), p), load=torch.load)
    state, start = ckpt.restore()                  # (None, 0) when there is nothing to restore
    for step in range(start, N):
        ...                                        # train one step
        if ckpt.step_done(step + 1):               # True: SIGTERM arrived; it has just saved
            sys.exit(0)
    ckpt.save_now(N)                               # final checkpoint; progress.json step == N

Layout of the directory: `checkpoint-<step>` (a file or a directory, whatever `save` writes; step =
steps completed) for the last `keep` saves, and `progress.json` = {"step", "totalSteps", "updatedAt",
"trainingSeconds", "byInstanceType"}: the training time behind that step, over every attempt (this
process's time since its restore, plus what the restored checkpoint's progress.json said), so
Spotline can estimate the whole job's work from real throughput instead of the declared
expectedDuration; and per instance type ($SM_CURRENT_INSTANCE_TYPE, which SageMaker sets in the
container) the steps done and the seconds they took there, so a job that may run on several types
is planned with each type's own speed.
A kill at any instant, SIGKILL included, leaves complete checkpoints only: each is written under a
temporary name in the same directory, fsynced and renamed into place (rename is atomic), and
`progress.json` is replaced the same way only afterwards, so it never names a missing or partial
checkpoint; older checkpoints are deleted only after that.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Generic, TypeVar

DIR_ENV = "SPOTLINE_CHECKPOINT_DIR"
INTERVAL_ENV = "SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"  # set by Spotline in the training job's Environment
FIRST_INTERVAL_ENV = "SPOTLINE_FIRST_CHECKPOINT_MINUTES"  # set by Spotline when the first save must come sooner
DEFAULT_DIR = "/opt/ml/checkpoints"  # SageMaker's default CheckpointConfig.LocalPath
DEFAULT_INTERVAL_MINUTES = 15.0
INSTANCE_TYPE_ENV = "SM_CURRENT_INSTANCE_TYPE"  # set by SageMaker in the training container
PROGRESS_FILE = "progress.json"
PREFIX = "checkpoint-"
_TEMP_MARK = ".tmp-"  # temporary names: ".checkpoint-<step>.tmp-<pid>", ".progress.json.tmp-<pid>"
_NAME = re.compile(r"checkpoint-(\d+)")

log = logging.getLogger(__name__)

T = TypeVar("T")


class Checkpointer(Generic[T]):  # noqa: UP046 (Generic rather than PEP 695 syntax: must run on Python 3.11)
    """Saves and restores training state through `save(path)` / `load(path) -> state` callbacks.

    `directory`: None reads $SPOTLINE_CHECKPOINT_DIR, else /opt/ml/checkpoints (created on first save).
    `interval_minutes`: None reads $SPOTLINE_CHECKPOINT_INTERVAL_MINUTES, else 15.
    `first_interval_minutes`: the first save after each restore (None reads
    $SPOTLINE_FIRST_CHECKPOINT_MINUTES, else the interval): Spotline asks for an early one when the
    deadline policy needs the work measured before the interval would measure it.
    `clock`: seconds, monotonic; injectable so tests need no sleeping.
    `handle_sigterm`: install a SIGTERM handler (main thread only) that requests a stop; `close()`
    (or leaving a `with` block) puts the previous handler back.
    One process writes a directory: in distributed training, only rank 0 should save (or every rank
    its shard through spotline.training.sharded_checkpoint.ShardedCheckpointer).
    """

    def __init__(
        self,
        *,
        total_steps: int,
        save: Callable[[Path], object],
        load: Callable[[Path], T],
        directory: str | os.PathLike[str] | None = None,
        interval_minutes: float | None = None,
        first_interval_minutes: float | None = None,
        keep: int = 2,
        clock: Callable[[], float] = time.monotonic,
        handle_sigterm: bool = True,
    ) -> None:
        if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(
                f"total_steps must be a positive int (it is progress.json's totalSteps), not {total_steps!r}"
            )
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        self.total_steps = total_steps
        self.directory = Path(directory if directory is not None else os.environ.get(DIR_ENV) or DEFAULT_DIR)
        self.interval_seconds = 60.0 * _interval_minutes(interval_minutes)
        first = _first_interval_minutes(first_interval_minutes)
        self.first_interval_seconds = min(self.interval_seconds, 60.0 * first) if first else self.interval_seconds
        self._saved_since_resume = False
        self.keep = keep
        self._save = save
        self._load = load
        self._clock = clock
        self._last_save_at = clock()
        self._trained_before = 0.0  # training seconds behind the restored step (earlier attempts)
        self._by_type_before: dict[str, dict[str, float]] = {}  # {type: {steps, seconds}} behind it
        self._restored_step = 0
        self.instance_type = os.environ.get(INSTANCE_TYPE_ENV, "").strip()
        self._resumed_at = clock()  # when this process's training began
        self._stop_requested = False
        self._previous_handler: Any = None
        self._handler_installed = False
        if handle_sigterm:
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
            self._handler_installed = True

    # -- the training loop's calls -------------------------------------------------------------------

    def restore(self) -> tuple[T | None, int]:
        """(state, steps completed) from the newest checkpoint that loads, or (None, 0).

        The newest checkpoint file, not progress.json, decides: after a crash between the two
        writes (or an S3 sync that copied one but not the other) the checkpoint is the truth. A
        checkpoint that fails to load is skipped for the one before it, with a warning; if none
        loads, the newest one's error is raised (a bug in `load` should not silently restart at 0).
        """
        self._remove_temporaries()
        first_error: Exception | None = None
        for step, path in reversed(self._checkpoints()):
            try:
                state = self._load(path)
            except Exception as exc:
                log.warning("checkpoint %s does not load (%s: %s); trying an older one", path, type(exc).__name__, exc)
                first_error = first_error or exc
                continue
            log.info("restored step %d of %d from %s", step, self.total_steps, path)
            self._start_at(step)
            return state, step
        if first_error is not None:
            raise first_error
        log.info("no checkpoint in %s: starting at step 0", self.directory)
        self._start_at(None)
        return None, 0

    def step_done(self, step: int) -> bool:
        """Call after each step with the steps completed so far. Saves when the interval has passed
        or a stop was requested; returns True (after saving) when the script should exit now."""
        stop = self._stop_requested
        due = self.interval_seconds if self._saved_since_resume else self.first_interval_seconds
        if stop or self._clock() - self._last_save_at >= due:
            self.save_now(step)
        if stop:
            log.info("stop requested (SIGTERM): saved step %d of %d; exit now", step, self.total_steps)
        return stop

    def save_now(self, step: int) -> Path:
        """Checkpoint `step` (steps completed) now and point progress.json at it; returns its path.

        A checkpoint of the same step already on disk is kept rather than written again (the state
        after a given step does not change), so a final `save_now(N)` after a periodic save at N,
        or after restoring a finished run, costs only the progress.json update.
        """
        if step < 0:
            raise ValueError(f"step must be >= 0, not {step}")
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / f"{PREFIX}{step}"
        if not target.exists():
            temporary = self.directory / f".{PREFIX}{step}{_TEMP_MARK}{os.getpid()}"
            _remove(temporary)
            try:
                self._save(temporary)
                if not temporary.exists():
                    raise RuntimeError(f"the save callback wrote nothing at {temporary}")
                _fsync_tree(temporary)
                os.replace(temporary, target)
            except BaseException:
                _remove(temporary)
                raise
            _fsync_dir(self.directory)
        self._write_progress(step)
        self._last_save_at = self._clock()
        self._saved_since_resume = True
        self._prune(step)
        log.info("saved step %d of %d to %s", step, self.total_steps, target)
        return target

    def should_stop(self) -> bool:
        """True once SIGTERM arrived (or `request_stop()` was called): finish the step, then
        `step_done` saves and says stop. SageMaker kills the container 120 s after SIGTERM."""
        return self._stop_requested

    def request_stop(self) -> None:
        """Ask for the same save-and-stop as SIGTERM (e.g. from a deadline of the script's own)."""
        self._stop_requested = True

    def close(self) -> None:
        """Put back the SIGTERM handler that was there before this helper's."""
        if self._handler_installed:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._handler_installed = False

    def __enter__(self) -> Checkpointer[T]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # -- inside ---------------------------------------------------------------------------------------

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        # Only records the request: saving here could interrupt an optimizer step half-way, and
        # the loop reaches step_done() within one step.
        self._stop_requested = True

    def _start_at(self, step: int | None) -> None:
        """This process trains from the restored `step` (None: nothing restored, from step 0): the time
        and per-type figures behind it come from progress.json, and the intervals count from now."""
        self._trained_before = 0.0 if step is None else self._training_seconds_at(step)
        self._by_type_before = {} if step is None else self._by_type_at(step)
        self._restored_step = step or 0
        self._last_save_at = self._resumed_at = self._clock()
        self._saved_since_resume = False

    def _checkpoints(self) -> list[tuple[int, Path]]:
        """Complete checkpoints, oldest first (only renamed-into-place names match)."""
        if not self.directory.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := _NAME.fullmatch(p.name))]
        return sorted(found)

    def _training_seconds_at(self, step: int) -> float:
        """The training seconds behind the restored `step`, from progress.json: as recorded when it
        names that step; in proportion when it names another (a crash between the two writes);
        0 when it has none (an older helper, or no file)."""
        try:
            saved = json.loads((self.directory / PROGRESS_FILE).read_text(encoding="utf-8"))
            seconds, at = float(saved["trainingSeconds"]), int(saved["step"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0.0
        if seconds < 0 or at <= 0:
            return 0.0
        return seconds if at == step else seconds * step / at

    def _by_type_at(self, step: int) -> dict[str, dict[str, float]]:
        """progress.json's per-type record behind the restored `step` ({} when it names another step
        or has none: the per-type figures start again rather than count steps twice)."""
        try:
            saved = json.loads((self.directory / PROGRESS_FILE).read_text(encoding="utf-8"))
            by_type = saved.get("byInstanceType") if int(saved["step"]) == step else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}
        if not isinstance(by_type, dict):
            return {}
        kept = {}
        for name, entry in by_type.items():
            try:
                kept[str(name)] = {"steps": float(entry["steps"]), "seconds": float(entry["seconds"])}
            except (KeyError, TypeError, ValueError):
                continue
        return kept

    def _write_progress(self, step: int, extra: dict[str, object] | None = None) -> None:
        updated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        here = max(0.0, self._clock() - self._resumed_at)
        trained = round(self._trained_before + here, 1)
        progress: dict[str, object] = {
            "step": step,
            "totalSteps": self.total_steps,
            "updatedAt": updated,
            "trainingSeconds": trained,
        }
        if self.instance_type or self._by_type_before:
            by_type = {name: dict(entry) for name, entry in self._by_type_before.items()}
            if self.instance_type:
                entry = by_type.setdefault(self.instance_type, {"steps": 0.0, "seconds": 0.0})
                entry["steps"] += max(0, step - self._restored_step)
                entry["seconds"] = round(entry["seconds"] + here, 1)
            progress["byInstanceType"] = {
                name: {"steps": int(entry["steps"]), "seconds": entry["seconds"]} for name, entry in by_type.items()
            }
        progress.update(extra or {})
        body = json.dumps(progress)
        temporary = self.directory / f".{PROGRESS_FILE}{_TEMP_MARK}{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8") as out:
                out.write(body + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.directory / PROGRESS_FILE)
        except BaseException:
            _remove(temporary)
            raise
        _fsync_dir(self.directory)

    def _prune(self, newest: int) -> None:
        """Keep `newest` and the `keep - 1` before it. Checkpoints of later steps are stale (a run
        restarted without restoring), and progress.json no longer names them, so they go too."""
        found = self._checkpoints()
        older = [path for step, path in found if step < newest]
        stale = [path for step, path in found if step > newest]
        for path in stale + older[: max(0, len(older) - (self.keep - 1))]:
            _remove(path)

    def _remove_temporaries(self) -> None:
        """Leftovers of a save that was killed (or copied half-way by the S3 sync) are never read."""
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                if path.name.startswith(".") and _TEMP_MARK in path.name:
                    _remove(path)


def _interval_minutes(given: float | None) -> float:
    if given is None:
        text = os.environ.get(INTERVAL_ENV, "").strip()
        try:
            given = float(text) if text else DEFAULT_INTERVAL_MINUTES
        except ValueError:
            raise ValueError(f"{INTERVAL_ENV}={text!r} is not a number of minutes") from None
    if not given > 0:  # also rejects NaN
        raise ValueError(f"the checkpoint interval must be a positive number of minutes, not {given!r}")
    return float(given)


def _first_interval_minutes(given: float | None) -> float | None:
    if given is None:
        text = os.environ.get(FIRST_INTERVAL_ENV, "").strip()
        if not text:
            return None
        try:
            given = float(text)
        except ValueError:
            raise ValueError(f"{FIRST_INTERVAL_ENV}={text!r} is not a number of minutes") from None
    if not given > 0:  # also rejects NaN
        raise ValueError(f"the first checkpoint interval must be a positive number of minutes, not {given!r}")
    return float(given)


def _fsync_tree(path: Path) -> None:
    """Flush a file, or every file and directory of a directory checkpoint, to disk."""
    paths = [path]
    if path.is_dir():
        paths += sorted(path.rglob("*"))
    for item in paths:
        if item.is_dir():
            _fsync_dir(item)
        elif item.is_file():
            fd = os.open(item, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Make renames in `path` durable (not supported everywhere, e.g. Windows: then skipped)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
