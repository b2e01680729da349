"""The execution state's sections as typed, frozen records (pure): each has `to_state()` (the
camelCase keys the state carries, in its order) and a strict `from_state()`. Handlers, the
adapters and devtools' readers take these instead of reading the state by string key."""

from spotline.core.state.checks import (
    DatasetCheck,
    ExcludedRegion,
    LiveRunCheck,
    ManifestCheck,
    Problem,
    RegionPlanState,
    ResourceCheck,
    ServiceJobRecord,
    SpecRef,
)
from spotline.core.state.cleanup import JobsStopped
from spotline.core.state.execution_state import JobSummary
from spotline.core.state.fields import Key, StateError, StateKeyMissing, StateRecord, keys_of, state_keys
from spotline.core.state.inputs import (
    CaughtError,
    CleanupFailure,
    DependencyTimeout,
    Failure,
    RunInput,
    ScoringInput,
    UnreadBills,
    UnsettledBills,
)
from spotline.core.state.moves import ContinuedAs, ContinuedFrom, Fallback
from spotline.core.state.outcome import Outcome
from spotline.core.state.scoring import Scoring, ScoringOutcome, ScoringPlan, ScoringRunState, TransformJobsStopped
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
    "CaughtError",
    "CheckpointCopy",
    "CleanupFailure",
    "ContinuedAs",
    "ContinuedFrom",
    "DatasetCheck",
    "DeadlineNotice",
    "Decision",
    "DependencyTimeout",
    "Escalation",
    "ExcludedRegion",
    "Failure",
    "Fallback",
    "FinalStatus",
    "JobSummary",
    "JobsStopped",
    "Key",
    "LiveRunCheck",
    "ManifestCheck",
    "Outcome",
    "PlanRef",
    "Problem",
    "Progress",
    "RegionChoice",
    "RegionConsidered",
    "RegionPlanState",
    "ResourceCheck",
    "RunInput",
    "RunStatus",
    "Scoring",
    "ScoringInput",
    "ScoringOutcome",
    "ScoringPlan",
    "ScoringRunState",
    "ServiceJobRecord",
    "SpecRef",
    "Speed",
    "StateError",
    "StateKeyMissing",
    "StateRecord",
    "Training",
    "TransformJobsStopped",
    "UnreadBills",
    "UnsettledBills",
    "as_state",
    "history_of",
    "keys_of",
    "state_keys",
]
