"""The sharded checkpoint helper: four ranks in one process (threads meeting at a real
threading.Barrier, or calls one after another with a barrier that does nothing), kills mid-save,
the restore's check of the shard count, the reshardable format and SIGTERM."""

from __future__ import annotations

import ast
import json
import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import spotline.training.sharded_checkpoint as sharded_module
from spotline.training.sharded_checkpoint import JOB_ENV, ShardedCheckpointer

WORLD = 4


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Group:
    """What torch.distributed gives the ranks: a barrier and an all-reduce of a flag (MAX), here
    between threads; a rank that never comes breaks the barrier after 5 s instead of hanging."""

    def __init__(self, size: int) -> None:
        self._barrier = threading.Barrier(size, timeout=5)
        self._flags = [False] * size
        self.arrived: list[int] = []

    def barrier_of(self, rank: int) -> Callable[[], None]:
        def barrier() -> None:
            self.arrived.append(rank)
            self._barrier.wait()

        return barrier

    def any_of(self, rank: int) -> Callable[[bool], bool]:
        def any_rank(flag: bool) -> bool:
            self._flags[rank] = flag
            self._barrier.wait()
            result = any(self._flags)
            self._barrier.wait()  # nobody overwrites a flag before every rank has read them
            return result

        return any_rank


def shard_saver(rank: int, value: Callable[[], int]) -> Callable[[Path], None]:
    def save(path: Path) -> None:
        path.write_text(json.dumps({"rank": rank, "value": value()}))

    return save


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def make(
    directory: Path,
    rank: int,
    *,
    world: int = WORLD,
    group: Group | None = None,
    save: Callable[[Path], object] | None = None,
    value: Callable[[], int] = lambda: 0,
    **kwargs: Any,
) -> ShardedCheckpointer[dict[str, Any]]:
    kwargs.setdefault("clock", Clock())
    kwargs.setdefault("handle_sigterm", False)
    kwargs.setdefault("interval_minutes", 1)
    return ShardedCheckpointer(
        total_steps=100,
        save_shard=save or shard_saver(rank, value),
        load_shard=load,
        barrier=group.barrier_of(rank) if group else (lambda: None),
        all_reduce_any=group.any_of(rank) if group else (lambda flag: flag),
        rank=rank,
        world_size=world,
        directory=directory,
        **kwargs,
    )


def in_threads(work: Callable[[int], object], size: int = WORLD) -> list[object]:
    """work(rank) for every rank at once; the first error of any rank is raised."""
    results: list[object] = [None] * size
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            results[rank] = work(rank)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    if errors:
        raise errors[0]
    return results


def save_all(directory: Path, step: int, world: int = WORLD, **kwargs: Any) -> None:
    """Every rank saves `step`, one after another (a no-op barrier: no rank waits here)."""
    for rank in range(world):
        make(directory, rank, world=world, value=lambda: step, **kwargs).save_now(step)


def progress(directory: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((directory / "progress.json").read_text())
    return loaded


def test_the_module_parses_as_python_3_11() -> None:
    ast.parse(Path(sharded_module.__file__).read_text(), feature_version=(3, 11))


def test_rank_and_world_come_from_torchrun_and_many_ranks_need_the_collectives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ValueError, match="barrier= and all_reduce_any="):
        ShardedCheckpointer(total_steps=10, save_shard=print, load_shard=load, directory=tmp_path)
    ckpt = ShardedCheckpointer(
        total_steps=10,
        save_shard=print,
        load_shard=load,
        barrier=lambda: None,
        all_reduce_any=bool,
        directory=tmp_path,
        handle_sigterm=False,
    )
    assert (ckpt.rank, ckpt.world_size, ckpt.local_rank) == (3, 4, 3)
    with pytest.raises(ValueError, match="rank 4 of world_size 4"):
        make(tmp_path, 4)


def test_four_ranks_save_their_shards_and_rank_0_alone_writes_progress_json_after_the_barrier(tmp_path: Path) -> None:
    group = Group(WORLD)
    seen_by_the_last_shard: list[bool] = []

    def save(rank: int) -> Callable[[Path], None]:
        def write(path: Path) -> None:
            if rank == 3:  # the slowest rank: the other three wait at the barrier meanwhile
                while len(group.arrived) < 3:
                    threading.Event().wait(0.001)
                seen_by_the_last_shard.append((tmp_path / "progress.json").exists())
            path.write_text(f"shard {rank}")

        return write

    in_threads(lambda rank: make(tmp_path, rank, group=group, save=save(rank)).save_now(20))

    assert seen_by_the_last_shard == [False]  # rank 0 waited for rank 3's shard
    step = tmp_path / "checkpoint-20"
    assert sorted(p.name for p in step.iterdir()) == ["done", *(f"shard-{r}-of-4" for r in range(4))]
    assert sorted(p.name for p in (step / "done").iterdir()) == [f"shard-{r}-of-4" for r in range(4)]
    assert (step / "shard-2-of-4").read_text() == "shard 2"
    saved = progress(tmp_path)
    assert (saved["step"], saved["totalSteps"], saved["shards"], saved["reshardable"]) == (20, 100, 4, False)


def test_only_rank_0_writes_progress_json(tmp_path: Path) -> None:
    for rank in (3, 2, 1):
        make(tmp_path, rank).save_now(10)
    assert not (tmp_path / "progress.json").exists()
    make(tmp_path, 0).save_now(10)
    assert progress(tmp_path)["shards"] == 4


def test_every_rank_restores_its_own_shard_of_the_newest_complete_step(tmp_path: Path) -> None:
    save_all(tmp_path, 10)
    save_all(tmp_path, 20)
    restored = in_threads(lambda rank: make(tmp_path, rank).restore())
    assert restored == [({"rank": rank, "value": 20}, 20) for rank in range(WORLD)]


def test_a_kill_mid_save_leaves_a_step_that_is_never_resumed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_all(tmp_path, 10)
    for rank in range(3):  # ranks 0-2 finish step 20; rank 3's node dies while writing its shard
        make(tmp_path, rank, value=lambda: 20).save_now(20)
    torn = tmp_path / "checkpoint-20" / f".shard-3-of-4{sharded_module._TEMP_MARK}99"
    torn.write_text('{"rank": 3, "val')
    assert progress(tmp_path)["step"] == 20  # rank 0 alone (no real barrier here) already named it

    with caplog.at_level(logging.WARNING):
        restored = [make(tmp_path, rank).restore() for rank in range(WORLD)]

    assert restored == [({"rank": rank, "value": 10}, 10) for rank in range(WORLD)]
    assert "checkpoint-20 is incomplete (missing shard-3-of-4)" in caplog.text
    assert not (tmp_path / "checkpoint-20").exists()  # dropped: a later save of step 20 starts clean


def test_an_upload_that_brought_a_shard_but_not_its_marker_is_incomplete(tmp_path: Path) -> None:
    save_all(tmp_path, 10)
    save_all(tmp_path, 20)
    (tmp_path / "checkpoint-20" / "done" / "shard-1-of-4").unlink()
    assert [make(tmp_path, rank).restore()[1] for rank in range(WORLD)] == [10] * WORLD


def test_a_marker_without_its_shard_is_incomplete(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_all(tmp_path, 10)
    save_all(tmp_path, 20)
    (tmp_path / "checkpoint-20" / "shard-2-of-4").unlink()
    with caplog.at_level(logging.WARNING):
        assert make(tmp_path, 0).restore()[1] == 10
    assert "marked but absent: shard-2-of-4" in caplog.text


def test_shards_of_two_jobs_at_the_same_step_never_mix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JOB_ENV, "attempt-1")
    save_all(tmp_path, 10, world=2)
    make(tmp_path, 0, world=2).save_now(20)  # attempt 1: rank 1 killed before its shard of 20
    monkeypatch.setenv(JOB_ENV, "attempt-2")
    make(tmp_path, 1, world=2).save_now(20)  # attempt 2: rank 0 killed before its shard of 20
    assert make(tmp_path, 0, world=2).inspect(tmp_path / "checkpoint-20").world is None
    assert make(tmp_path, 1, world=2).restore()[1] == 10


def test_nothing_complete_starts_at_zero(tmp_path: Path) -> None:
    make(tmp_path, 0).save_now(10)
    assert make(tmp_path, 2).restore() == (None, 0)


def test_a_different_world_size_is_refused_naming_both_counts(tmp_path: Path) -> None:
    save_all(tmp_path, 10)
    with pytest.raises(ValueError, match=r"written by 4 ranks and this job has 2") as refused:
        make(tmp_path, 0, world=2).restore()
    assert "reshardable=True" in str(refused.value)


def dcp_like(rank: int, world: int) -> Callable[[Path], None]:
    """What torch.distributed.checkpoint.save does: every rank writes its file into the one step
    directory, rank 0 the metadata naming them all."""

    def save(step_dir: Path) -> None:
        (step_dir / f"__{rank}_0.distcp").write_text(str(rank))
        if rank == 0:
            (step_dir / ".metadata").write_text(json.dumps([f"__{r}_0.distcp" for r in range(world)]))

    return save


def dcp_load(step_dir: Path) -> dict[str, Any]:
    names = json.loads((step_dir / ".metadata").read_text())
    return {"parts": [(step_dir / name).read_text() for name in names]}


def test_a_reshardable_checkpoint_loads_into_another_world_size(tmp_path: Path) -> None:
    for rank in range(WORLD):
        make(tmp_path, rank, save=dcp_like(rank, WORLD), reshardable=True).save_now(30)
    assert progress(tmp_path)["reshardable"] is True

    def two_ranks(rank: int) -> tuple[dict[str, Any] | None, int]:
        ckpt: ShardedCheckpointer[dict[str, Any]] = ShardedCheckpointer(
            total_steps=100,
            save_shard=dcp_like(rank, 2),
            load_shard=dcp_load,
            barrier=lambda: None,
            all_reduce_any=bool,
            rank=rank,
            world_size=2,
            reshardable=True,
            directory=tmp_path,
            handle_sigterm=False,
        )
        return ckpt.restore()

    assert [two_ranks(rank) for rank in range(2)] == [({"parts": ["0", "1", "2", "3"]}, 30)] * 2


def test_the_format_must_match_what_the_checkpoint_was_written_in(tmp_path: Path) -> None:
    save_all(tmp_path, 10)
    with pytest.raises(ValueError, match="one shard per rank; this run has reshardable=True"):
        make(tmp_path, 0, world=2, reshardable=True).restore()


def test_every_rank_saves_at_the_same_step_though_their_clocks_differ(tmp_path: Path) -> None:
    group = Group(WORLD)
    clocks = [Clock() for _ in range(WORLD)]
    ckpts = [make(tmp_path, rank, group=group, clock=clocks[rank]) for rank in range(WORLD)]
    saved: list[list[int]] = [[] for _ in range(WORLD)]

    def train(rank: int) -> None:
        for step in range(1, 8):
            clocks[rank].now += 30 if rank == 2 else 10  # rank 2's interval passes first, at step 2
            before = ckpts[rank]._saved_step
            ckpts[rank].step_done(step)
            if ckpts[rank]._saved_step != before:
                saved[rank].append(step)

    in_threads(train)
    assert saved == [[2, 4, 6]] * WORLD
    assert progress(tmp_path)["step"] == 6


def test_sigterm_on_one_rank_saves_every_rank_and_stops_them_all(tmp_path: Path, sigterm_guard: None) -> None:
    group = Group(WORLD)
    ckpts = [make(tmp_path, rank, group=group, handle_sigterm=rank == 1) for rank in range(WORLD)]
    os.kill(os.getpid(), signal.SIGTERM)  # arrives at rank 1's handler only
    assert [c.should_stop() for c in ckpts] == [False, True, False, False]

    stopped = in_threads(lambda rank: ckpts[rank].step_done(7))

    assert stopped == [True] * WORLD
    assert progress(tmp_path)["step"] == 7
    assert len(list((tmp_path / "checkpoint-7" / "done").iterdir())) == WORLD
    ckpts[1].close()


def test_no_save_while_no_rank_is_due(tmp_path: Path) -> None:
    group = Group(WORLD)
    assert in_threads(lambda rank: make(tmp_path, rank, group=group).step_done(1)) == [False] * WORLD
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_old_steps_are_pruned_by_local_rank_0_only(tmp_path: Path) -> None:
    for step in (10, 20, 30):
        save_all(tmp_path, step)
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-20", "checkpoint-30"]
    other_node = tmp_path / "other"
    for step in (10, 20, 30):
        for rank in (4, 5):
            make(other_node, rank, world=8, local_rank=rank - 3, value=lambda step=step: step).save_now(step)
    assert len(list(other_node.glob("checkpoint-*"))) == 3


def test_the_final_save_after_a_restore_of_that_step_writes_progress_only(tmp_path: Path) -> None:
    writes: list[int] = []
    save_all(tmp_path, 100)
    for rank in range(WORLD):
        ckpt = make(tmp_path, rank, save=lambda path, rank=rank: writes.append(rank))
        assert ckpt.restore()[1] == 100
        ckpt.save_now(100)
    assert writes == []
    assert progress(tmp_path)["step"] == 100
