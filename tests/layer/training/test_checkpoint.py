"""The training-side checkpoint helper: interval, restore, atomicity under crashes at any point,
keep-last-2, progress.json as Spotline reads it, and save-then-stop on SIGTERM."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import signal
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import spotline.training.checkpoint as checkpoint_module
from spotline.training.checkpoint import DEFAULT_DIR, DIR_ENV, FIRST_INTERVAL_ENV, INTERVAL_ENV, Checkpointer


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Store:
    """A JSON 'framework': save writes the current state in two writes (so a kill between them
    would tear it), load rejects anything that is not a complete state."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"step": 0}
        self.saves = 0

    def save(self, path: Path) -> None:
        self.saves += 1
        body = json.dumps({**self.state, "complete": True}).encode()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # os-level: the crash tests count these calls
        try:
            os.write(fd, body[: len(body) // 2])
            os.write(fd, body[len(body) // 2 :])
        finally:
            os.close(fd)

    @staticmethod
    def load(path: Path) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(path.read_text())
        assert state.pop("complete") is True
        return state


def make(
    directory: Path, store: Store, clock: Callable[[], float] | None = None, **kwargs: Any
) -> Checkpointer[dict[str, Any]]:
    kwargs.setdefault("clock", clock or FakeClock())
    kwargs.setdefault("total_steps", 100)
    kwargs.setdefault("interval_minutes", 1)
    kwargs.setdefault("handle_sigterm", False)
    return Checkpointer(directory=directory, save=store.save, load=store.load, **kwargs)


def run_to(ckpt: Checkpointer[dict[str, Any]], store: Store, step: int) -> Path:
    store.state = {"step": step}
    return ckpt.save_now(step)


def progress(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "progress.json").read_text())  # type: ignore[no-any-return]


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- configuration --------------------------------------------------------------------------------------


def test_directory_and_interval_come_from_the_environment_spotline_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DIR_ENV, "/tmp/somewhere")
    monkeypatch.setenv(INTERVAL_ENV, "5")
    ckpt = Checkpointer(total_steps=10, save=Store().save, load=Store.load, handle_sigterm=False)
    assert (ckpt.directory, ckpt.interval_seconds) == (Path("/tmp/somewhere"), 300.0)

    monkeypatch.delenv(DIR_ENV)
    monkeypatch.delenv(INTERVAL_ENV)
    ckpt = Checkpointer(total_steps=10, save=Store().save, load=Store.load, handle_sigterm=False)
    assert (ckpt.directory, ckpt.interval_seconds) == (Path(DEFAULT_DIR), 900.0)  # SageMaker's layout, 15 min
    assert not Path(DEFAULT_DIR).exists() or Path(DEFAULT_DIR).is_dir()  # constructing creates nothing


def test_explicit_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DIR_ENV, "/tmp/somewhere")
    monkeypatch.setenv(INTERVAL_ENV, "5")
    ckpt = make(tmp_path, Store(), interval_minutes=0.5)
    assert (ckpt.directory, ckpt.interval_seconds) == (tmp_path, 30.0)


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan"])
def test_a_bad_interval_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(INTERVAL_ENV, value)
    with pytest.raises(ValueError, match=r"interval|INTERVAL"):
        Checkpointer(total_steps=10, save=Store().save, load=Store.load, handle_sigterm=False)


@pytest.mark.parametrize("total", [0, -3, True])
def test_total_steps_must_be_a_positive_int(tmp_path: Path, total: int) -> None:
    with pytest.raises(ValueError, match="total_steps"):
        make(tmp_path, Store(), total_steps=total)


def test_the_module_parses_as_python_3_11() -> None:
    """Training images run older Pythons than the Lambda layer: no 3.12+ syntax here."""
    ast.parse(Path(checkpoint_module.__file__).read_text(), feature_version=(3, 11))


# -- interval ---------------------------------------------------------------------------------------------


def test_step_done_saves_only_when_the_interval_has_passed(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    ckpt = make(tmp_path, store, clock, interval_minutes=2)
    assert ckpt.restore() == (None, 0)

    clock.advance(119)
    assert ckpt.step_done(1) is False
    assert store.saves == 0 and not (tmp_path / "progress.json").exists()

    clock.advance(1)  # 120 s since the start
    store.state = {"step": 2}
    assert ckpt.step_done(2) is False
    assert store.saves == 1 and progress(tmp_path)["step"] == 2

    clock.advance(119)  # the interval counts from the last save
    assert ckpt.step_done(3) is False
    assert store.saves == 1
    clock.advance(1)
    assert ckpt.step_done(4) is False
    assert store.saves == 2 and progress(tmp_path)["step"] == 4


def test_the_interval_counts_from_the_restore_not_from_construction(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    ckpt = make(tmp_path, store, clock)
    clock.advance(3600)  # e.g. a long download of the checkpoint before restore
    ckpt.restore()
    assert ckpt.step_done(1) is False and store.saves == 0


def test_an_early_first_save_comes_after_the_first_interval_then_every_interval(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    ckpt = make(tmp_path, store, clock, interval_minutes=15, first_interval_minutes=6)
    ckpt.restore()
    clock.advance(359)
    assert ckpt.step_done(1) is False and store.saves == 0
    clock.advance(1)  # 6 minutes after the restore: the first measurement
    assert ckpt.step_done(2) is False and store.saves == 1 and progress(tmp_path)["trainingSeconds"] == 360
    clock.advance(360)  # then the interval again
    assert ckpt.step_done(3) is False and store.saves == 1
    clock.advance(540)
    assert ckpt.step_done(4) is False and store.saves == 2


def test_the_early_first_save_applies_again_after_each_restore(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    first = make(tmp_path, store, clock, interval_minutes=15, first_interval_minutes=5)
    first.restore()
    clock.advance(300)
    store.state = {"step": 1}
    first.step_done(1)
    assert store.saves == 1
    again = make(tmp_path, store, clock, interval_minutes=15, first_interval_minutes=5)  # a restart on spot
    assert again.restore()[1] == 1
    clock.advance(300)
    again.step_done(2)
    assert store.saves == 2


def test_the_first_interval_comes_from_the_environment_and_never_exceeds_the_interval(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(FIRST_INTERVAL_ENV, "6")
    assert make(tmp_path, Store(), interval_minutes=15).first_interval_seconds == 360.0
    assert make(tmp_path, Store(), interval_minutes=5).first_interval_seconds == 300.0
    monkeypatch.delenv(FIRST_INTERVAL_ENV)
    assert make(tmp_path, Store(), interval_minutes=15).first_interval_seconds == 900.0  # unset: the interval


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan"])
def test_a_bad_first_interval_is_refused_with_its_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(FIRST_INTERVAL_ENV, value)
    with pytest.raises(ValueError, match=r"first checkpoint|FIRST_CHECKPOINT"):
        Checkpointer(total_steps=10, save=Store().save, load=Store.load, handle_sigterm=False)


# -- restore ----------------------------------------------------------------------------------------------


def test_restore_with_nothing_there_starts_at_zero(tmp_path: Path) -> None:
    assert make(tmp_path / "missing", Store()).restore() == (None, 0)
    assert make(tmp_path, Store()).restore() == (None, 0)


def test_restore_returns_the_newest_state_and_its_step(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)
    run_to(ckpt, store, 9)
    assert make(tmp_path, Store()).restore() == ({"step": 9}, 9)


def test_a_checkpoint_that_does_not_load_falls_back_to_the_one_before(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)
    run_to(ckpt, store, 9)
    (tmp_path / "checkpoint-9").write_text('{"step": 9')  # damaged outside the helper's control
    assert make(tmp_path, Store()).restore() == ({"step": 5}, 5)


def test_when_nothing_loads_the_newest_error_is_raised_rather_than_restarting_at_zero(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)

    def broken(path: Path) -> dict[str, Any]:
        raise KeyError("model")

    with pytest.raises(KeyError, match="model"):
        Checkpointer(directory=tmp_path, total_steps=100, save=store.save, load=broken, handle_sigterm=False).restore()


def test_a_directory_checkpoint_is_saved_restored_and_pruned_like_a_file(tmp_path: Path) -> None:
    current = {"step": 0}

    def save(path: Path) -> None:  # e.g. save_pretrained(path)
        (path / "shards").mkdir(parents=True)
        (path / "shards" / "0.bin").write_text(str(current["step"]))
        (path / "config.json").write_text("{}")

    def load(path: Path) -> str:
        return (path / "shards" / "0.bin").read_text()

    ckpt = Checkpointer(directory=tmp_path, total_steps=10, save=save, load=load, handle_sigterm=False)
    for step in (1, 2, 3):
        current["step"] = step
        ckpt.save_now(step)
    assert names(tmp_path) == ["checkpoint-2", "checkpoint-3", "progress.json"]
    restored = Checkpointer(directory=tmp_path, total_steps=10, save=save, load=load, handle_sigterm=False).restore()
    assert restored == ("3", 3)


def test_a_save_callback_that_writes_nothing_is_an_error(tmp_path: Path) -> None:
    ckpt = Checkpointer(directory=tmp_path, total_steps=10, save=lambda p: None, load=Store.load, handle_sigterm=False)
    with pytest.raises(RuntimeError, match="wrote nothing"):
        ckpt.save_now(1)
    assert not (tmp_path / "progress.json").exists()


# -- atomicity --------------------------------------------------------------------------------------------


class Crash(BaseException):
    """The process dying at this instant (BaseException: nothing in the helper may catch it)."""


def test_crash_between_the_checkpoint_and_progress_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)

    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst).name == "progress.json":
            raise Crash
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Crash):
        run_to(ckpt, store, 8)
    monkeypatch.undo()

    # progress.json still names the previous checkpoint, which is still there and complete ...
    assert progress(tmp_path)["step"] == 5
    assert Store.load(tmp_path / "checkpoint-5") == {"step": 5}
    # ... and restore takes the newer one, which is complete too (it was renamed into place whole)
    assert make(tmp_path, Store()).restore() == ({"step": 8}, 8)


def test_torn_temporaries_left_by_a_kill_are_ignored_and_cleared(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)
    # a SIGKILL while the save callback was writing, and another while progress.json was written
    (tmp_path / ".checkpoint-9.tmp-4242").write_text('{"step": 9, "comp')
    (tmp_path / ".progress.json.tmp-4242").write_text('{"step": 9, "tot')
    (tmp_path / ".checkpoint-7.tmp-4242").mkdir()  # a directory checkpoint, half written

    assert make(tmp_path, Store()).restore() == ({"step": 5}, 5)
    assert names(tmp_path) == ["checkpoint-5", "progress.json"]
    assert progress(tmp_path)["step"] == 5


def test_a_save_callback_that_fails_leaves_the_previous_checkpoint_and_no_temporary(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 5)

    def failing(path: Path) -> None:
        path.write_text("{")
        raise OSError("disk full")

    ckpt._save = failing  # the callback the caller supplied
    with pytest.raises(OSError, match="disk full"):
        ckpt.save_now(6)
    assert names(tmp_path) == ["checkpoint-5", "progress.json"]
    assert make(tmp_path, Store()).restore() == ({"step": 5}, 5)


FILESYSTEM_CALLS = ("open", "write", "fsync", "replace", "unlink")


def _count_filesystem_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int) -> int:
    calls = 0

    def counting(name: str) -> Callable[..., Any]:
        real = getattr(os, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            return real(*args, **kwargs)

        return call

    store = Store()
    ckpt = make(tmp_path, store, keep=keep)
    run_to(ckpt, store, 1)
    run_to(ckpt, store, 2)
    with monkeypatch.context() as patch:
        for name in FILESYSTEM_CALLS:
            patch.setattr(os, name, counting(name))
        run_to(ckpt, store, 3)
    return calls


@pytest.mark.parametrize("keep", [1, 2])
def test_a_kill_at_any_filesystem_call_of_a_save_leaves_a_consistent_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    """Kill the save (one that also prunes) at each of its os.open / write / fsync / replace / unlink
    calls, the caller's save callback included: restore gives the old or the new state, complete, and
    progress.json names a checkpoint that exists and loads."""
    total = _count_filesystem_calls(tmp_path / "count", monkeypatch, keep)
    assert total >= 6
    outcomes = set()
    for crash_at in range(1, total + 1):
        directory = tmp_path / f"crash-{crash_at}"
        store = Store()
        ckpt = make(directory, store, keep=keep)
        run_to(ckpt, store, 1)
        run_to(ckpt, store, 2)

        calls = 0

        def crashing(name: str) -> Callable[..., Any]:
            real = getattr(os, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                nonlocal calls
                calls += 1
                if calls >= crash_at:  # noqa: B023 (this iteration's); dead stays dead: no cleanup runs
                    raise Crash
                return real(*args, **kwargs)

            return call

        with monkeypatch.context() as patch:
            for name in FILESYSTEM_CALLS:
                patch.setattr(os, name, crashing(name))
            with contextlib.suppress(Crash):
                run_to(ckpt, store, 3)

        for path in directory.glob("checkpoint-*"):  # whatever carries a checkpoint's name is complete
            assert Store.load(path) == {"step": int(path.name.split("-")[1])}, (crash_at, path.name)
        state, step = make(directory, Store()).restore()
        assert step in (2, 3) and state == {"step": step}, crash_at
        pointed = progress(directory)["step"]
        assert pointed in (2, 3) and Store.load(directory / f"checkpoint-{pointed}") == {"step": pointed}, crash_at
        assert pointed <= step
        outcomes.add((pointed, step))
    assert outcomes >= {(2, 2), (2, 3), (3, 3)}  # the crash points cover before, between and after


# -- keep-last-2 and progress.json ------------------------------------------------------------------------


def test_only_the_last_two_checkpoints_are_kept(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    for step in range(1, 6):
        run_to(ckpt, store, step)
    assert names(tmp_path) == ["checkpoint-4", "checkpoint-5", "progress.json"]
    assert progress(tmp_path)["step"] == 5


def test_keep_is_configurable(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store, keep=3)
    for step in range(1, 6):
        run_to(ckpt, store, step)
    assert names(tmp_path) == ["checkpoint-3", "checkpoint-4", "checkpoint-5", "progress.json"]


def test_checkpoints_of_later_steps_from_an_abandoned_run_are_dropped(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    run_to(ckpt, store, 50)
    run_to(ckpt, store, 60)
    fresh = make(tmp_path, store)  # a run that starts over without restoring
    run_to(fresh, store, 1)
    assert names(tmp_path) == ["checkpoint-1", "progress.json"]
    assert progress(tmp_path)["step"] == 1


def test_progress_json_is_what_spotline_reads(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store, total_steps=250)
    before = datetime.now(UTC).replace(microsecond=0)
    run_to(ckpt, store, 40)
    saved = progress(tmp_path)
    assert list(saved) == ["step", "totalSteps", "updatedAt", "trainingSeconds"]
    assert (saved["step"], saved["totalSteps"]) == (40, 250)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", saved["updatedAt"])
    stamped = datetime.strptime(saved["updatedAt"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= stamped <= datetime.now(UTC) + timedelta(seconds=1)


def test_the_final_save_after_a_periodic_one_at_the_same_step_does_not_write_it_again(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    ckpt = make(tmp_path, store, clock, total_steps=10)
    clock.advance(60)
    ckpt.step_done(10)
    ckpt.save_now(10)
    assert store.saves == 1 and progress(tmp_path)["step"] == 10


# -- SIGTERM ----------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("sigterm_guard")
def test_sigterm_requests_a_stop_and_step_done_saves_then_says_stop(tmp_path: Path) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    clock, store = FakeClock(), Store()
    with Checkpointer(
        directory=tmp_path, total_steps=100, save=store.save, load=store.load, clock=clock, handle_sigterm=True
    ) as ckpt:
        ckpt.restore()
        assert signal.getsignal(signal.SIGTERM) == ckpt._on_sigterm
        assert ckpt.step_done(1) is False and store.saves == 0

        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next bytecode; the process lives on
        assert ckpt.should_stop()

        store.state = {"step": 2}
        assert ckpt.step_done(2) is True  # well inside the interval: it saves because of the stop
        assert store.saves == 1 and progress(tmp_path)["step"] == 2
    assert signal.getsignal(signal.SIGTERM) == previous  # close() put the previous handler back
    assert make(tmp_path, Store()).restore() == ({"step": 2}, 2)


def test_request_stop_behaves_like_sigterm_without_a_handler(tmp_path: Path) -> None:
    store = Store()
    ckpt = make(tmp_path, store)
    ckpt.request_stop()
    assert ckpt.step_done(3) is True and progress(tmp_path)["step"] == 3


# -- training seconds (Spotline estimates the job's work from them) --------------------------------------


def test_training_seconds_add_up_over_restarts_and_exclude_the_time_between(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    first = make(tmp_path, store, clock)
    first.restore()
    clock.advance(600)
    run_to(first, store, 20)
    clock.advance(300)
    run_to(first, store, 30)  # then preempted: 900 s of training behind step 30
    assert progress(tmp_path)["trainingSeconds"] == 900.0

    clock.advance(7200)  # waiting for spot capacity: not training
    second = make(tmp_path, store, clock)
    assert second.restore()[1] == 30
    clock.advance(450)
    run_to(second, store, 45)

    assert progress(tmp_path)["trainingSeconds"] == 1350.0


def test_restoring_a_step_progress_json_does_not_name_scales_its_training_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, store = FakeClock(), Store()
    monkeypatch.setenv("SM_CURRENT_INSTANCE_TYPE", "ml.g5.2xlarge")
    first = make(tmp_path, store, clock)
    first.restore()
    clock.advance(1000)
    run_to(first, store, 40)
    (tmp_path / "checkpoint-40").rename(tmp_path / "checkpoint-20")  # progress.json says 40, the file 20

    second = make(tmp_path, store, clock)
    assert second.restore()[1] == 20
    run_to(second, store, 20)
    assert progress(tmp_path)["trainingSeconds"] == 500.0
    clock.advance(100)
    run_to(second, store, 22)
    # The per-type record starts again rather than count the steps between 20 and 40 twice.
    assert progress(tmp_path)["byInstanceType"] == {"ml.g5.2xlarge": {"steps": 2, "seconds": 100.0}}


def test_a_progress_json_without_training_seconds_counts_from_this_process(tmp_path: Path) -> None:
    clock, store = FakeClock(), Store()
    run_to(make(tmp_path, store, clock), store, 10)
    (tmp_path / "progress.json").write_text(json.dumps({"step": 10, "totalSteps": 100}))  # an older helper

    second = make(tmp_path, store, clock)
    second.restore()
    clock.advance(120)
    run_to(second, store, 12)

    assert progress(tmp_path)["trainingSeconds"] == 120.0


def test_steps_and_seconds_are_kept_per_instance_type_over_restarts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that moves between instance types (resources.alternatives) records each type's own
    throughput: the steps done on it and the seconds they took ($SM_CURRENT_INSTANCE_TYPE)."""
    clock, store = FakeClock(), Store()
    monkeypatch.setenv("SM_CURRENT_INSTANCE_TYPE", "ml.g5.2xlarge")
    first = make(tmp_path, store, clock)
    first.restore()
    clock.advance(600)
    run_to(first, store, 20)

    monkeypatch.setenv("SM_CURRENT_INSTANCE_TYPE", "ml.g6.2xlarge")
    second = make(tmp_path, store, clock)
    assert second.restore()[1] == 20
    clock.advance(900)
    run_to(second, store, 35)

    saved = progress(tmp_path)
    assert saved["byInstanceType"] == {
        "ml.g5.2xlarge": {"steps": 20, "seconds": 600.0},
        "ml.g6.2xlarge": {"steps": 15, "seconds": 900.0},
    }
    assert saved["trainingSeconds"] == 1500.0
