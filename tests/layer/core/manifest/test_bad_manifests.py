"""Every bad manifest is refused, names the field (or the document-level problem), never raises,
and is judged quickly -- alias bombs and oversized uploads included.

The cases are the files in `bad/` (small variants of examples/manifests/ranker-v2.yaml) plus a
few generated here because they cannot carry a comment or should not sit on disk. A YAML file's
first line says what it must produce:

    # expect: <path> [| <substring of the message>]

`(manifest)` is the path of whole-document problems; those always name a message substring.
JSON has no comments, so the JSON files' expectations are in `JSON_EXPECT` below.
"""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.manifest.manifest import ValidationResult, format_path, validate_bytes
from spotline_dev.cli.entry import main

HERE = Path(__file__).resolve().parent
BAD_DIR = HERE / "bad"
EXAMPLE = HERE.parents[3] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
NOW_ARG = "2026-11-29T00:00:00Z"
TIME_LIMIT_S = 2.0
HANG_LIMIT_S = 10
MIN_BAD_FILES = 45

JSON_EXPECT: dict[str, tuple[str, str | None]] = {
    "json-duplicate-key.json": (DOCUMENT, "duplicate key 'team'"),
    "json-malformed-trailing-comma.json": (DOCUMENT, "invalid JSON"),
    "json-root-list.json": (DOCUMENT, "found a list"),
    "json-nan.json": (DOCUMENT, "NaN is not valid JSON"),
    "json-priority-string.json": ("spec.priority", "must be an integer"),
    "json-checkpoint-missing.json": ("spec.checkpoint", "strategy spot-first"),
}

_EXPECT_LINE = re.compile(r"# expect: (?P<path>\S+)(?: \| (?P<substring>.+))?")


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    path: str
    substring: str | None = None
    expected_team: str | None = None


def _expectation(file: Path, data: bytes) -> tuple[str, str | None]:
    if file.suffix == ".json":
        return JSON_EXPECT[file.name]
    first_line = data.split(b"\n", 1)[0].decode("ascii")
    match = _EXPECT_LINE.fullmatch(first_line.rstrip())
    assert match, f"{file.name}: first line must be '# expect: <path> [| <substring>]', got {first_line!r}"
    return match["path"], match["substring"]


def bad_files() -> list[Path]:
    return sorted(p for p in BAD_DIR.iterdir() if p.suffix in {".yaml", ".yml", ".json"})


def _file_cases() -> list[Case]:
    cases = []
    for file in bad_files():
        data = file.read_bytes()
        path, substring = _expectation(file, data)
        cases.append(Case(file.name, data, path, substring))
    return cases


_BASE = EXAMPLE.read_text()
HYPERPARAMETERS = "hyperparameters: {epochs: 12, lr: 0.0003, mixed_precision: true}"
ENVIRONMENT = "environment: {WANDB_MODE: offline}"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28"
ROLE = "arn:aws:iam::123456789012:role/spotline/ranker-training"


def _variant(old: str, new: str) -> bytes:
    assert old in _BASE
    return _BASE.replace(old, new, 1).encode()


def _one_past_each_limit() -> list[Case]:
    """SageMaker's limits (and Spotline's bounds) one character or entry past the limit; the
    exact limits are accepted (test_limits.py)."""
    long_name = "k" * 257
    long_env_name = "K" * 513
    return [
        Case(
            "generated:hyperparameter-value-2501-chars",
            _variant("lr: 0.0003", "lr: " + "x" * 2501),
            "spec.hyperparameters.lr",
            "at most 2500 characters, got 2501",
        ),
        Case(
            "generated:hyperparameter-value-3000-digit-number",
            _variant("epochs: 12", "epochs: " + "9" * 3000),
            "spec.hyperparameters.epochs",
            "once sent to SageMaker as a string, got a number of 3000",
        ),
        Case(
            "generated:hyperparameter-name-257-chars",
            _variant("lr: 0.0003", f"{long_name}: 0.0003"),
            format_path(["spec", "hyperparameters", long_name]),
            "name must be at most 256 characters, got 257",
        ),
        Case(
            "generated:hyperparameters-101",
            _variant(HYPERPARAMETERS, "hyperparameters: {" + ", ".join(f"h{i}: {i}" for i in range(101)) + "}"),
            "spec.hyperparameters",
            "at most 100 entries, got 101",
        ),
        Case(
            "generated:environment-value-513-chars",
            _variant("WANDB_MODE: offline", "WANDB_MODE: " + "x" * 513),
            "spec.environment.WANDB_MODE",
            "at most 512 characters, got 513",
        ),
        Case(
            "generated:environment-value-513-digit-number",
            _variant("WANDB_MODE: offline", "WANDB_MODE: " + "7" * 513),
            "spec.environment.WANDB_MODE",
            "as a string, got a number of 513",
        ),
        Case(
            "generated:environment-name-513-chars",
            _variant(ENVIRONMENT, f"environment: {{{long_env_name}: x}}"),
            format_path(["spec", "environment", long_env_name]),
            "environment variable names must be 1-512",
        ),
        Case(
            "generated:image-256-chars",
            _variant(IMAGE, IMAGE.replace("ranker:", "r" * (256 - len(IMAGE) + 6) + ":")),
            "spec.image",
            "at most 255 characters, got 256",
        ),
        Case(
            "generated:owner-255-chars",
            _variant("alice@example.com", "a" * 243 + "@example.com"),
            "metadata.owner",
            "at most 254 characters, got 255",
        ),
        Case(
            "generated:rolearn-2049-chars",
            _variant(ROLE, ROLE.replace("aws:", "aws" + "-" * (2049 - len(ROLE)) + ":")),
            "spec.roleArn",
            "at most 2048 characters, got 2049",
        ),
        Case(
            "generated:label-value-257-chars",
            _variant('"4711"', "v" * 257),
            "metadata.labels.cost-center",
            "at most 256 characters, got 257",
        ),
        Case(
            "generated:deadline-41-chars",
            _variant('"2026-12-02T06:00:00Z"', '"2026-12-02T06:00:00.' + "0" * 20 + 'Z"'),
            "spec.capacity.deadline",
            "at most 40 characters, got 41",
        ),
        Case(
            "generated:duration-41-chars",
            _variant("maxRuntime: 30h", "maxRuntime: " + "0" * 38 + "30h"),
            "spec.capacity.maxRuntime",
            "at most 40 characters, got 41",
        ),
        Case(
            "generated:instancetype-65-chars",
            _variant("ml.g5.2xlarge", "ml.g5." + "x" * 59),
            "spec.resources.instanceType",
            "at most 64 characters, got 65",
        ),
    ]


def _generated_cases() -> list[Case]:
    example = EXAMPLE.read_bytes()
    padding = b"# padding so the upload is larger than the 256 KiB limit\n" * (300 * 1024 // 57 + 1)
    return [
        Case("generated:empty-file", b"", DOCUMENT, "manifest is empty"),
        Case("generated:whitespace-only", b"  \n\t\n\r\n   ", DOCUMENT, "manifest is empty"),
        Case("generated:bom-only", b"\xef\xbb\xbf\n", DOCUMENT, "manifest is empty"),
        Case("generated:non-utf8-bytes", b"\xff\xfe\xfa" + example, DOCUMENT, "not UTF-8 (invalid byte at offset 0)"),
        Case("generated:utf16-encoded", example.decode().encode("utf-16"), DOCUMENT, "not UTF-8"),
        Case("generated:300-KiB", example + padding, DOCUMENT, "the limit is 262144 bytes"),
        Case("generated:300-KiB-json", b"[" + b" " * (300 * 1024) + b"]", DOCUMENT, "the limit is 262144 bytes"),
        Case("generated:alias-bomb-deep", _alias_bomb(levels=12, width=10), DOCUMENT, "alias bomb"),
        Case("generated:json-scalar-root", b"42\n", DOCUMENT, "found the number 42"),
        Case("generated:yaml-null-root", b"~\n", DOCUMENT, "found nothing"),
        Case("generated:team-mismatch", example, "metadata.team", "manifests/recommendations/", "recommendations"),
        *_one_past_each_limit(),
    ]


def _alias_bomb(levels: int, width: int) -> bytes:
    lines = ['l0: &l0 "' + "lol" * 10 + '"']
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return ("\n".join(lines) + "\n").encode()


CASES = _file_cases() + _generated_cases()


@contextmanager
def _hang_guard(seconds: int) -> Iterator[None]:
    """Turn a hang (say, an alias bomb being expanded after all) into a failure, where SIGALRM exists."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"validation still running after {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _validate_timed(case: Case) -> tuple[ValidationResult, float]:
    started = time.perf_counter()
    with _hang_guard(HANG_LIMIT_S):
        result = validate_bytes(case.data, now=NOW, expected_team=case.expected_team)
    return result, time.perf_counter() - started


def _matching(errors: list[ManifestError], path: str) -> list[ManifestError]:
    return [e for e in errors if e.path == path or e.path.startswith((f"{path}.", f"{path}["))]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_manifest_is_refused_with_the_named_error(case: Case) -> None:
    result, elapsed = _validate_timed(case)

    assert not result.valid
    assert result.spec is None
    assert result.errors, "an invalid result must carry its errors"
    assert all(isinstance(e, ManifestError) and e.path and e.message for e in result.errors)
    shown = "\n".join(map(str, result.errors))
    matching = _matching(result.errors, case.path)
    assert matching, f"no error at {case.path!r}; got:\n{shown}"
    if case.substring is not None:
        assert any(case.substring in e.message for e in matching), f"no {case.substring!r} at {case.path!r}:\n{shown}"
    assert elapsed < TIME_LIMIT_S, f"took {elapsed:.2f}s"


# A renamed field is reported twice: as unknown, and as the required field now missing.
EXTRA_ERRORS_EXPECTED = {"unknown-nested-typo.yaml": ["spec.resources.instanceType"]}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_case_breaks_only_its_own_rule(case: Case) -> None:
    """So a case cannot pass because of some other, accidental mistake in the file."""
    errors = validate_bytes(case.data, now=NOW, expected_team=case.expected_team).errors
    others = [e.path for e in errors if e not in _matching(errors, case.path)]
    assert others == EXTRA_ERRORS_EXPECTED.get(case.id, []), errors


def test_document_level_cases_name_a_message_and_nothing_else() -> None:
    for case in CASES:
        if case.path == DOCUMENT:
            assert case.substring, f"{case.id}: a document-level case must name a message substring"
            result = validate_bytes(case.data, now=NOW, expected_team=case.expected_team)
            # A document that cannot be read yields exactly one error, about the document.
            assert [e.path for e in result.errors] == [DOCUMENT], case.id


def test_bad_folder_is_large_and_every_file_has_an_expectation() -> None:
    files = bad_files()
    assert len(files) >= MIN_BAD_FILES
    assert {p.name for p in BAD_DIR.iterdir()} == {p.name for p in files}, "unexpected file types in bad/"
    json_files = {p.name for p in files if p.suffix == ".json"}
    assert json_files == set(JSON_EXPECT), "JSON_EXPECT must list exactly the JSON files in bad/"
    yaml_files = [p for p in files if p.suffix != ".json"]
    assert all(p.read_bytes().startswith(b"# expect: ") for p in yaml_files)


def test_the_example_the_bad_files_are_based_on_is_valid() -> None:
    result = validate_bytes(EXAMPLE.read_bytes(), now=NOW)
    assert result.valid, result.errors
    assert result.spec is not None
    assert validate_bytes(EXAMPLE.read_bytes(), now=NOW, expected_team="search-ranking").valid


def test_validation_never_raises_on_truncations_of_the_example() -> None:
    """Any prefix of a valid manifest is either valid or refused with errors, never an exception."""
    data = EXAMPLE.read_bytes()
    for end in range(0, len(data), 7):
        result = validate_bytes(data[:end], now=NOW)
        assert result.valid == (not result.errors)
        assert (result.spec is None) == (not result.valid)


# --- the CLI over the whole folder -----------------------------------------------------------


def _run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, object]]]:
    code = main(["validate", "--json", "--now", NOW_ARG, *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_cli_json_reports_every_file(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in bad_files()] + [str(EXAMPLE)]

    code, reports = _run_cli(capsys, *files)

    assert code == 1
    assert [r["file"] for r in reports] == files
    assert [r["valid"] for r in reports] == [False] * (len(files) - 1) + [True]
    assert reports[-1]["errors"] == []
    for report in reports[:-1]:
        errors = report["errors"]
        assert isinstance(errors, list) and errors, report["file"]
        for error in errors:
            assert set(error) == {"path", "message"}
            assert isinstance(error["path"], str) and isinstance(error["message"], str)


def test_cli_json_errors_are_the_library_errors(capsys: pytest.CaptureFixture[str]) -> None:
    file = BAD_DIR / "maxwait-below-maxruntime.yaml"

    code, reports = _run_cli(capsys, str(file))

    expected = validate_bytes(file.read_bytes(), now=NOW).errors
    assert code == 1
    assert reports == [{"file": str(file), "valid": False, "errors": [e.to_dict() for e in expected], "warnings": []}]
    assert {"path": "spec.capacity.maxWait"}.items() <= reports[0]["errors"][0].items()  # type: ignore[index,union-attr]


def test_cli_valid_example_alone_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, reports = _run_cli(capsys, str(EXAMPLE))
    assert code == 0
    assert reports == [{"file": str(EXAMPLE), "valid": True, "errors": [], "warnings": []}]


def test_cli_team_option_checks_the_folder_team(capsys: pytest.CaptureFixture[str]) -> None:
    code, reports = _run_cli(capsys, "--team", "recommendations", str(EXAMPLE))
    assert code == 1
    assert [e["path"] for e in reports[0]["errors"]] == ["metadata.team"]  # type: ignore[union-attr,index]


def test_cli_deadline_is_judged_as_of_now_option(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["validate", "--json", "--now", "2026-12-03T00:00:00Z", str(EXAMPLE)])
    reports = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [e["path"] for e in reports[0]["errors"]] == ["spec.capacity.deadline"]
    assert "in the past" in reports[0]["errors"][0]["message"]


def test_cli_missing_file_is_reported_not_raised(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    code, reports = _run_cli(capsys, missing, str(EXAMPLE))
    assert code == 1
    assert reports[0]["file"] == missing
    assert reports[0]["valid"] is False
    assert reports[0]["errors"][0]["path"] == DOCUMENT  # type: ignore[index]
    assert "cannot read file" in reports[0]["errors"][0]["message"]  # type: ignore[index]
    assert reports[1]["valid"] is True


@pytest.mark.parametrize(
    "argv",
    [
        ["validate"],
        ["validate", "--json"],
        ["validate", "--now", "yesterday", str(EXAMPLE)],
        ["validate", "--now", "2026-11-29T00:00:00", str(EXAMPLE)],
        [],
        ["frobnicate", str(EXAMPLE)],
    ],
    ids=["no-files", "json-no-files", "bad-now", "now-without-offset", "no-command", "unknown-command"],
)
def test_cli_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "usage:" in captured.err


# --- known package bugs (see the report); strict, so a fix makes these fail until unmarked -----


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            b"[" * 100_000,
            id="json-nested-100k-deep",
        ),
        pytest.param(
            _variant("hyperparameters: {epochs: 12, lr: 0.0003, mixed_precision: true}", "hyperparameters: &h {k: *h}"),
            id="yaml-self-referencing-alias",
        ),
        pytest.param(
            _variant("maxRuntime: 30h", "maxRuntime: " + "9" * 5000 + "d"),
            id="duration-with-5000-digits",
        ),
        pytest.param(
            _variant('"2026-12-02T06:00:00Z"', '"9999-12-31T23:59:59-01:00"'),
            id="deadline-beyond-year-9999-in-utc",
        ),
    ],
)
def test_pathological_input_is_an_error_not_a_crash(data: bytes) -> None:
    result = validate_bytes(data, now=NOW)
    assert isinstance(result, ValidationResult)
    assert not result.valid
    assert result.errors


def test_out_of_range_maxruntime_is_not_compared_as_1d() -> None:
    data = _variant("maxRuntime: 30h", "maxRuntime: 29d").replace(b"expectedDuration: 8h", b"expectedDuration: 2d")
    errors = validate_bytes(data, now=NOW).errors
    assert [e.path for e in errors] == ["spec.capacity.maxRuntime"], errors
