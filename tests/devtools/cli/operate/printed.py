"""Reading what a command printed in the tests, where the local stack's handlers print too."""

from __future__ import annotations

import json


def printed_json(out: str) -> object:
    """The document a command printed with --output json (indented), among the single-line
    logs and metrics the local stack's handlers print to the same stdout."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line in ("{", "[", "[]", "{}"))
    if lines[start] in ("[]", "{}"):
        return json.loads(lines[start])
    end = next(i for i in range(start, len(lines)) if lines[i] == {"{": "}", "[": "]"}[lines[start]])
    return json.loads("\n".join(lines[start : end + 1]))


def printed_lines(out: str) -> list[str]:
    """What the command printed, without the handlers' JSON logs and metrics."""
    return [line for line in out.splitlines() if not line.startswith('{"')]
