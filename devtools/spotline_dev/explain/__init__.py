"""`spotline explain`: the story of one execution, told from its Step Functions history.

`explain(history, describe_execution)` is pure: it reads what each state stored under its own
key ($.manifest, $.resources, $.training, $.status, $.fallback, $.outcome, $.failure, ...) and
the execution's end, and returns a `Story` (what happened, why, what to do next, the timeline,
the attempts, the console links). `fetch`, `execution_arn_for` and `execution_arn_in_stack` are
the thin boto3 part for a deployed stack; the sandbox passes the histories of its local executions.

States and keys this package does not know (the workflow grows) are shown generically: a line
with the key the state added or changed, never a crash. The sections the layer types ($.training,
$.status, $.fallback, $.scoring, a scoring run's $.outcome) are read as their records of
spotline.core.state through `history.read_section`, which gives None for a section of another age
instead of the records' strict StateError; the caller then shows what it always did.

- `history`: reading the history (and fetching it from a deployed stack), the facts of a run;
- `timeline`: one line per meaningful change;
- `story`: the `Story` and building it from the facts, with the next step to take;
- `render`: the story as text;
- `words`: a run's figures in words, shared with the sandbox's output (the saving, or why none);
- `plot`: the run as a picture (`--plot`): capacity over time, checkpointed progress against the
  deadline and the policy's switch line, each decision marked (matplotlib, loaded only when drawing).
"""

from spotline_dev.explain.history import (
    ExplainError,
    HistoryEvent,
    execution_arn_for,
    execution_arn_in_stack,
    fetch,
    fetch_run,
    readable_cause,
    region_of,
    rfc3339,
)
from spotline_dev.explain.render import render_text
from spotline_dev.explain.story import Attempt, Failure, Problem, Story, explain
from spotline_dev.explain.timeline import TimelineEntry, format_entry, offset, timeline, timeline_entries

__all__ = [
    "Attempt",
    "ExplainError",
    "Failure",
    "HistoryEvent",
    "Problem",
    "Story",
    "TimelineEntry",
    "execution_arn_for",
    "execution_arn_in_stack",
    "explain",
    "fetch",
    "fetch_run",
    "format_entry",
    "offset",
    "readable_cause",
    "region_of",
    "render_text",
    "rfc3339",
    "timeline",
    "timeline_entries",
]
