"""Speeds per instance type (pure): measured from progress.json's byInstanceType where both the
type and the primary have enough training behind them, declared (alternatives[].speed) until then."""

from __future__ import annotations

from spotline.core.capacity.speeds import MIN_MEASURED_SECONDS, measured_throughputs, primary_throughput, type_speeds
from tests.layer.core.capacity.test_alternatives import ALTERNATIVES, spec_with

SPEC = spec_with(ALTERNATIVES)  # ml.g5.2xlarge, then ml.g6.2xlarge (declared 0.8), ml.g6e.4xlarge (1.0)


def speeds(by_type: dict[str, dict[str, float]] | None) -> list[tuple[str, float, str]]:
    return [(s.instance_type, round(s.speed, 3), s.source) for s in type_speeds(SPEC, by_type)]


def test_speeds_are_declared_until_measured() -> None:
    assert speeds(None) == [
        ("ml.g5.2xlarge", 1.0, "declared"),
        ("ml.g6.2xlarge", 0.8, "declared"),
        ("ml.g6e.4xlarge", 1.0, "declared"),
    ]


def test_a_type_and_the_primary_both_measured_give_a_measured_speed() -> None:
    by_type = {"ml.g5.2xlarge": {"steps": 60, "seconds": 3600}, "ml.g6.2xlarge": {"steps": 30, "seconds": 3600}}
    assert speeds(by_type)[:2] == [("ml.g5.2xlarge", 1.0, "measured"), ("ml.g6.2xlarge", 0.5, "measured")]
    assert speeds(by_type)[2] == ("ml.g6e.4xlarge", 1.0, "declared")


def test_without_the_primary_measured_the_speeds_stay_declared_but_the_work_is_measured() -> None:
    by_type = {"ml.g6.2xlarge": {"steps": 30, "seconds": 3600}}
    assert [source for _, _, source in speeds(by_type)] == ["declared"] * 3
    # The primary's throughput comes from g6's measured one and its declared speed (0.8).
    assert primary_throughput(SPEC, measured_throughputs(by_type)) == 30 / 3600 / 0.8


def test_too_little_training_or_a_malformed_entry_measures_nothing() -> None:
    assert measured_throughputs({"ml.g5.2xlarge": {"steps": 5, "seconds": MIN_MEASURED_SECONDS - 1}}) == {}
    assert measured_throughputs({"ml.g5.2xlarge": {"steps": "x", "seconds": 3600}, "b": None}) == {}
    assert measured_throughputs({"ml.g5.2xlarge": {"steps": 0, "seconds": 3600}}) == {}
