"""How a section of the execution state maps to a record, field by field (pure).

Each record field names its state key (`key(...)`); `StateRecord` turns a record into the state's
dict and back from it in one way for every section. Reading is strict: a key the state machine
keeps and the record needs raises `StateKeyMissing` naming the section and the key, instead of a
`.get()` that returns None and quietly changes what the next step does. A field is tolerant only
where the state legitimately lacks the key (`optional`, which says why) or where the key is left
out when empty (`omit_none`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self, cast

MAX_REASON = 1024
"""SageMaker's own bound on FailureReason; Batch's statusReason has none."""
ELLIPSIS = "…"


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit - 1` characters and an ellipsis (what the state keeps of a text
    whose length nothing bounds)."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


class StateError(ValueError):
    """A section of the execution state that is not what its record expects."""


class StateKeyMissing(StateError):
    """A key the record needs is not in its section of the state."""

    def __init__(self, section: str, key: str) -> None:
        super().__init__(f"{section} has no {key!r}: a ResultSelector or a handler dropped it")
        self.section = section
        self.key = key


@dataclass(frozen=True, slots=True)
class Key:
    """One field's key in the state, and how to read and write it."""

    name: str
    """The camelCase key the state carries."""
    doc: str
    """What on-call reads in it (docs/runbook.md's tables are generated from these)."""
    record: type[StateRecord] | None = None
    """A nested section (or, with `many`, a list of them)."""
    many: bool = False
    omit_none: bool = False
    """Absent from the state when None (and read as None when absent)."""
    optional: str | None = None
    """Why a state may lack the key (read as None then); None: the key is required."""
    answer_only: bool = False
    """In the handler's answer, not in the state: its Task's ResultSelector leaves it out (read as
    None when absent)."""


def key(
    name: str,
    doc: str,
    *,
    record: type[StateRecord] | None = None,
    many: bool = False,
    omit_none: bool = False,
    optional: str | None = None,
    answer_only: bool = False,
) -> Any:
    """A record field stored under `name` in the state (a dataclass field carrying its `Key`)."""
    meta = {"state": Key(name, doc, record, many, omit_none or answer_only, optional, answer_only)}
    if omit_none or optional or answer_only:
        return dataclasses.field(default=None, metadata=meta)
    return dataclasses.field(metadata=meta)


def keys_of(record: type[StateRecord]) -> list[tuple[str, Key]]:
    """Each field of `record` with its state key, in the state's order."""
    return [(f.name, f.metadata["state"]) for f in dataclasses.fields(cast(Any, record))]  # every one is a dataclass


def state_keys(record: type[StateRecord]) -> list[str]:
    """The keys a section carries, in order: what a ResultSelector keeps of the handler's answer
    (the state machine files build each ResultSelector from these, `spotline_dev.asl.sections`)."""
    return [k.name for _, k in keys_of(record) if not k.answer_only]


class StateRecord:
    """A section of the execution state (subclasses are frozen, slotted, keyword-only dataclasses)."""

    __slots__ = ()
    SECTION: ClassVar[str] = "$"
    """Where the section sits in the state, for error messages and the runbook."""

    def to_state(self) -> dict[str, Any]:
        """The section as the state carries it: its camelCase keys, in the state's order."""
        out: dict[str, Any] = {}
        for attr, k in keys_of(type(self)):
            value = getattr(self, attr)
            if value is None and k.omit_none:
                continue
            out[k.name] = _encode(value, k)
        return out

    @classmethod
    def of_state(cls, state: Mapping[str, Any]) -> Self:
        """The section in the whole execution state `state`, which a step after its writer reads:
        `StateKeyMissing` when it is not there."""
        found = cls.in_state(state)
        if found is None:
            raise StateKeyMissing("$", cls.SECTION.removeprefix("$."))
        return found

    @classmethod
    def in_state(cls, state: Mapping[str, Any]) -> Self | None:
        """The section in the whole execution state `state` (a top-level one, `$.<key>`), or None
        while the step that writes it has not run yet (no key, or null)."""
        name = cls.SECTION.removeprefix("$.")
        if "." in name or "[" in name or name == "$":
            raise TypeError(f"{cls.__name__} is not a top-level section of the state ({cls.SECTION})")
        value = state.get(name)
        return None if value is None else cls.from_state(value)

    @classmethod
    def from_state(cls, data: Any, section: str | None = None) -> Self:
        """The record of `data`, a section of the state; `StateError` when a key it needs is missing."""
        where = section or cls.SECTION
        if not isinstance(data, Mapping):
            raise StateError(f"{where} is {type(data).__name__}, not an object")
        values: dict[str, Any] = {}
        for attr, k in keys_of(cls):
            if k.name not in data:
                if k.omit_none or k.optional:
                    continue
                raise StateKeyMissing(where, k.name)
            values[attr] = _decode(data[k.name], k, f"{where}.{k.name}")
        return cls(**values)


def _encode(value: Any, k: Key) -> Any:
    if value is None or k.record is None:
        return value
    if k.many:
        return [item.to_state() for item in value]
    return value.to_state()


def _decode(value: Any, k: Key, where: str) -> Any:
    if value is None or k.record is None:
        return value
    if k.many:
        if not isinstance(value, list):
            raise StateError(f"{where} is {type(value).__name__}, not a list")
        return tuple(k.record.from_state(item, f"{where}[{i}]") for i, item in enumerate(value))
    return k.record.from_state(value, where)
