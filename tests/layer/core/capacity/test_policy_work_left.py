"""Issue 46: the work left while a job trains. A running attempt's work left is estimated from the
pace measured up to its last checkpoint and the time it has trained since; a restart still resumes
from the checkpoint; DeadlineAtRisk (`no_option_left`) fires only when even the estimate's
optimistic end misses the deadline, and its words say how sure the estimate is. Figures by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from spotline.core.capacity.policy import (
    JobClock,
    describe_work_left,
    estimate_spread,
    estimated_work_left,
    no_option_left,
    remaining_work,
    training_since_checkpoint,
)

NOW = datetime(2026, 12, 1, 6, 46, tzinfo=UTC)
MINUTE = 60.0
HOUR = 3600.0

# The false page of issue 46 at 06:46: 5 h of measured work, step 20 of 300 checkpointed at 06:28:30
# after 20 m of training (interval 20 m), 17m30s trained since; the deadline 11:22 is 4h36m away.
ON_PACE = JobClock(
    now=NOW,
    started_at=NOW - timedelta(minutes=46),
    deadline=datetime(2026, 12, 1, 11, 22, tzinfo=UTC),
    total_work_seconds=5 * HOUR,
    progress=20 / 300,
    capacity="on-demand",
    spot_missing=False,
    work_measured=True,
    trained_since_checkpoint=17.5 / 300,  # 17m30s of a 300-minute job
    since_checkpoint_seconds=17.5 * MINUTE,
    pace_measured_seconds=20 * MINUTE,
    checkpoint_interval_seconds=20 * MINUTE,
)


def test_the_running_attempts_work_left_counts_what_it_trained_since_the_checkpoint() -> None:
    assert remaining_work(ON_PACE) == 4 * HOUR + 40 * MINUTE  # from the checkpoint: what a restart needs
    assert estimated_work_left(ON_PACE) == 4 * HOUR + 22.5 * MINUTE  # 5 h - 20 m - 17m30s


def test_the_false_page_of_issue_46_does_not_fire_and_a_true_one_does() -> None:
    # 4h36m left; 4h22m30s of work: no page (the checkpoint's 4h40m paged).
    assert not no_option_left(ON_PACE, running=True)
    # Resuming from the checkpoint, at best: 4h40m less its 10 % spread (4h12m) plus a 20-minute
    # restart, 4h32m, fits in 4h36m too: a job not running would not be paged either.
    assert not no_option_left(ON_PACE, running=False)
    # The deadline at 10:30 (3h44m left): even 10 % faster, 4h22m30s * 0.9 = 3h56m15s does not fit.
    late = replace(ON_PACE, deadline=datetime(2026, 12, 1, 10, 30, tzinfo=UTC))
    assert no_option_left(late, running=True)
    # At 10:45 (3h59m left) the optimistic end, 3h56m15s, still fits: not yet paged.
    assert not no_option_left(replace(late, deadline=datetime(2026, 12, 1, 10, 45, tzinfo=UTC)), running=True)


def test_the_spread_shrinks_with_the_training_behind_the_pace() -> None:
    assert estimate_spread(ON_PACE) == 0.10  # one interval measured
    assert estimate_spread(replace(ON_PACE, pace_measured_seconds=80 * MINUTE)) == 0.05  # four: 10 % / 2
    assert estimate_spread(replace(ON_PACE, pace_measured_seconds=100 * HOUR)) == 0.02  # the floor
    assert estimate_spread(replace(ON_PACE, pace_measured_seconds=0.0)) == 0.0  # declared work


def test_a_completed_job_has_nothing_left_and_is_never_paged() -> None:
    done = replace(ON_PACE, progress=1.0, trained_since_checkpoint=0.0, deadline=NOW + timedelta(minutes=10))
    assert not no_option_left(done, running=False)  # no restart to pay for 0 s of work


def test_training_since_the_checkpoint_runs_from_the_later_of_it_and_the_resume_at_most_one_interval() -> None:
    checkpoint = datetime(2026, 12, 1, 6, 28, 30, tzinfo=UTC)
    training = datetime(2026, 12, 1, 6, 8, 30, tzinfo=UTC)
    assert training_since_checkpoint(NOW, checkpoint, training, 20 * MINUTE) == 17.5 * MINUTE
    # Resumed at 06:40 from an older checkpoint: 6 minutes trained in this attempt.
    assert training_since_checkpoint(NOW, checkpoint, NOW - timedelta(minutes=6), 20 * MINUTE) == 6 * MINUTE
    # No checkpoint for 40 minutes: the training code saves every 20, so no more than 20 is credited.
    assert training_since_checkpoint(NOW, NOW - timedelta(minutes=40), training, 20 * MINUTE) == 20 * MINUTE
    assert training_since_checkpoint(NOW, None, training, 20 * MINUTE) == 0.0


def test_the_words_say_how_sure_the_work_left_is() -> None:
    assert describe_work_left(ON_PACE, running=True) == (
        "about 4h22m30s of work left (estimated at the pace measured over 20m of training to the last "
        "checkpoint, less the 17m30s trained since it; it may be 26m15s less)"  # 10 % of 4h22m30s
    )
    assert describe_work_left(ON_PACE, running=False) == (
        "about 4h40m of work left from the last checkpoint (at the pace measured over 20m of training to it; "
        "it may be 28m less)"
    )
    declared = replace(ON_PACE, pace_measured_seconds=0.0, work_measured=False, trained_since_checkpoint=0.0)
    assert describe_work_left(declared, running=True) == (
        "4h40m of work left (from the declared expectedDuration: no pace measured yet)"
    )
