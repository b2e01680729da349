"""Capacity by Availability Zone (SpotWeather.for_job): a job's VpcConfig subnets pin it to their
zones, and among several it starts in the one with capacity first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from spotline_dev.harness.standin.base.spot_weather import SpotWeather

T0 = datetime(2026, 11, 29, 8, tzinfo=UTC)


def _weather() -> SpotWeather:
    no_spot_for_a_day = SpotWeather(capacity_gaps=[(T0, T0 + timedelta(hours=24))])
    return SpotWeather(
        spot_start_delay=300.0,
        zones={"us-east-1a": no_spot_for_a_day},
        subnet_zones={"subnet-a": "us-east-1a", "subnet-b": "us-east-1b"},
        instance_types={"ml.g5.2xlarge": SpotWeather(speed=0.8)},
    )


def test_a_job_in_one_zones_subnet_meets_that_zones_capacity_at_its_types_speed() -> None:
    weather, zone = _weather().for_job("ml.g5.2xlarge", ["subnet-a"], T0.timestamp(), spot=True)
    assert (zone, weather.capacity_gaps, weather.speed) == ("us-east-1a", [(T0, T0 + timedelta(hours=24))], 0.8)


def test_a_job_in_both_zones_starts_where_spot_is_and_on_demand_ignores_the_spot_gap() -> None:
    created = T0.timestamp()
    assert _weather().for_job("ml.p3.2xlarge", ["subnet-a", "subnet-b"], created, spot=True)[1] == "us-east-1b"
    assert _weather().for_job("ml.p3.2xlarge", ["subnet-a", "subnet-b"], created, spot=False)[1] == "us-east-1a"


def test_without_zone_weather_or_subnets_a_job_meets_its_types_capacity() -> None:
    weather = _weather()
    assert weather.for_job("ml.g5.2xlarge", [], T0.timestamp(), spot=True) == (weather.for_type("ml.g5.2xlarge"), "")
    weather.zones = {}
    assert weather.for_job("ml.p3.2xlarge", ["subnet-a"], T0.timestamp(), spot=True) == (weather, "")
