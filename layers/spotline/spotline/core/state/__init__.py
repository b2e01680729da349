"""The execution state's sections as typed, frozen records (pure): each has `to_state()` (the
camelCase keys the state carries, in its order) and a strict `from_state()`. Handlers, the
adapters and devtools' readers take these instead of reading the state by string key."""

from spotline.core.state.fields import Key, StateError, StateKeyMissing, StateRecord, keys_of, state_keys
from spotline.core.state.inputs import Failure, RunInput, ScoringInput
from spotline.core.state.moves import ContinuedAs, Fallback
from spotline.core.state.outcome import Outcome
from spotline.core.state.scoring import Scoring, ScoringOutcome, ScoringPlan, ScoringRunState
from spotline.core.state.status import (
    DeadlineNotice,
    Decision,
    Escalation,
    PlanRef,
    Progress,
    RegionChoice,
    RegionConsidered,
    RunStatus,
    Speed,
)
from spotline.core.state.training import AttemptRecord, CheckpointCopy, FinalStatus, Training, as_state, history_of

__all__ = [
    "AttemptRecord",
    "CheckpointCopy",
    "ContinuedAs",
    "DeadlineNotice",
    "Decision",
    "Escalation",
    "Failure",
    "Fallback",
    "FinalStatus",
    "Key",
    "Outcome",
    "PlanRef",
    "Progress",
    "RegionChoice",
    "RegionConsidered",
    "RunInput",
    "RunStatus",
    "Scoring",
    "ScoringInput",
    "ScoringOutcome",
    "ScoringPlan",
    "ScoringRunState",
    "Speed",
    "StateError",
    "StateKeyMissing",
    "StateRecord",
    "Training",
    "as_state",
    "history_of",
    "keys_of",
    "state_keys",
]
