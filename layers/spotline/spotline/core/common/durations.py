"""Durations in manifests: ISO 8601 (PT30H, P1DT12H) or compact (90m, 30h, 1d12h)."""

from __future__ import annotations

import re

_ISO = re.compile(r"^P(?!$)(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
_COMPACT = re.compile(r"^(?=\d)(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")

MAX_SECONDS = 28 * 24 * 3600
"""SageMaker's MaxRuntimeInSeconds ceiling (28 days)."""


def parse_duration(text: str) -> int:
    """Seconds in `text`; ValueError with a readable message if it is not a duration."""
    match = _ISO.match(text) or _COMPACT.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration such as 90m, 30h, 1d12h or PT30H")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


HOURS_UP_TO = 72 * 3600
"""Below this, durations are told in hours as people write them (36h, not 1d12h)."""


def format_duration(seconds: float) -> str:
    """Compact human form: 30h, 36h, 5m30s, 28d; days only from three days up; 0s for zero."""
    total = round(seconds)
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86400) if total >= HOURS_UP_TO else (0, total)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return sign + ("".join(parts) or "0s")
