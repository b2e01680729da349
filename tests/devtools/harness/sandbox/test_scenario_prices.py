"""A scenario's `prices:` are what the sandbox's Price List API lists beyond the bundled table: a
job in us-west-2 is priced with us-west-2's price, read by RecordOutcome through GetProducts."""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_checks import assert_reconciled

from spotline.core.spec import catalog
from spotline_dev.harness.sandbox.replay import load_scenario, public_summary, run_scenario
from spotline_dev.harness.sandbox.scenario import DEFAULT_SCENARIO, ScenarioError

EXAMPLES = DEFAULT_SCENARIO.parent
MANIFEST = (EXAMPLES / "manifests" / "deadline-across-regions.yaml").resolve()
US_WEST_2_G5 = 1.212  # USD per instance-hour: the scenario's us-west-2 price of ml.g5.2xlarge


def _scenario(tmp_path: Path, prices: str) -> Path:
    """examples/scenarios/spot-in-another-region.yaml, with `prices`."""
    text = (EXAMPLES / "spot-in-another-region.yaml").read_text()
    path = tmp_path / "priced.yaml"
    path.write_text(text.replace("manifests/deadline-across-regions.yaml", str(MANIFEST)) + prices)
    return path


def test_a_us_west_2_attempt_is_priced_with_the_scenario_s_us_west_2_price(tmp_path: Path) -> None:
    prices = f"prices:\n  us-west-2:\n    ml.g5.2xlarge: {US_WEST_2_G5}\n"
    summary = run_scenario(load_scenario(_scenario(tmp_path, prices)))
    (run,) = public_summary(summary)["executions"]

    # By hand, from the scenario (spot start 5m, the last 60 s of it the billed download; home spot
    # interrupted at 1h30m and gone for a day; 8h of work, checkpoints every 15m; managed spot bills
    # 30 % of the training time in the stand-in) and the job's 30 s in Batch's queue:
    #   us-east-1: trains from 5m30s to 1h30m = 5,070 s, plus the 60 s download: 5,130 s billed at
    #     spot, 0.3 * 5,130 = 1,539 s; at the table's $1.515/h: 1,539 / 3600 * 1.515 = $0.647663.
    #     Kept: five 15-minute checkpoints = 4,500 s (570 s lost).
    #   us-west-2: 60 s download + (28,800 - 4,500) s of work + 60 s upload = 24,420 s, billed at
    #     spot 0.3 * 24,420 = 7,326 s; at the scenario's $1.212/h: 7,326 / 3600 * 1.212 = $2.466420.
    #   The run: $0.647663 + $2.466420 = $3.114083; the checkpoint copy (166 bytes) costs $0.0000.
    assert run["regions"] == ["us-east-1", "us-west-2"]
    assert (run["trainingSeconds"], run["billableSeconds"], run["lostWorkSeconds"]) == (29_550, 8_865, 570)
    assert run["costUsd"] == 3.1141
    assert run["costUnknown"] is None
    used = {(p["region"], p["instanceType"]): (p["usdPerHour"], p["source"]) for p in run["prices"]}
    assert used == {
        ("us-east-1", "ml.g5.2xlarge"): (1.515, catalog.PRICE_LIST_API),  # the table's, as the API lists it
        ("us-west-2", "ml.g5.2xlarge"): (US_WEST_2_G5, catalog.PRICE_LIST_API),
    }
    # The stand-in's own ledger agrees once it prices us-west-2 as the scenario does.
    west = {("us-west-2", "ml.g5.2xlarge"): catalog.Price(US_WEST_2_G5, catalog.PRICE_LIST_API)}
    with catalog.priced_by(west):
        assert_reconciled(summary["executions"][0])


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ("prices:\n  us-west-2:\n    ml.g5.2xlarge: 0\n", "less than or equal to the minimum of 0"),
        ("prices:\n  us-west-2:\n    g5.2xlarge: 1.2\n", "SageMaker instance type"),
        ("prices:\n  oregon:\n    ml.g5.2xlarge: 1.2\n", "AWS Region code"),
    ],
)
def test_a_price_that_is_not_one_is_refused(tmp_path: Path, prices: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_scenario(tmp_path, prices))
