"""Instance types: valid when botocore's SageMaker model says so; the price table stays true to
that model, names a dated source for every figure, and a type it does not price costs `unknown`."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from importlib import resources

import botocore.loaders
import pytest
from state_samples import input_state, manifest_state, status_state, training_state

from builders import example_with
from spotline.core.billing.billing import JobBill, RunBill
from spotline.core.billing.cost import cost_usd, format_usd
from spotline.core.billing.outcome import decide
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec import catalog

NOW = datetime(2026, 11, 29, tzinfo=UTC)
REGION = "us-east-1"  # the price table's
# Every family the seeds and the SageMaker guidance name (issue 17): each is in the table, every
# size priced but in the families no dated source prices (see docs/teams/manifests.md, "Instance types and prices").
REQUIRED_FAMILIES = [
    "g5",
    "g6",
    "g6e",
    "p3",
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "trn1",
    "trn1n",
    "trn2",
    "c5",
    "c6i",
    "c7i",
    "m5",
    "m6i",
]
NO_PRICE_FOUND = {"p3", "p5e", "trn1n", "trn2"}
UNPRICED = "ml.m8i.4xlarge"  # valid for training, not in the table (examples/scenarios/instance-types.yaml)


def _botocore_training_types() -> set[str]:
    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return set(model["shapes"]["TrainingInstanceType"]["enum"])


def _table() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(resources.files("spotline.core").joinpath(catalog.TABLE).read_text())
    return loaded


def _manifest(instance_type: str) -> bytes:
    """The documentation's example manifest (docs/teams/manifests.md) on another instance type."""
    return example_with("instanceType: ml.g5.2xlarge", f"instanceType: {instance_type}")


def test_the_valid_types_are_botocores_training_instance_types() -> None:
    assert set(catalog.training_instance_type_names()) == _botocore_training_types()
    assert len(catalog.training_instance_type_names()) >= 225


@pytest.mark.parametrize("instance_type", sorted(_botocore_training_types()))
def test_a_manifest_on_any_training_type_is_valid(instance_type: str) -> None:
    result = validate_bytes(_manifest(instance_type), now=NOW)
    assert result.valid, result.errors
    assert result.spec is not None and result.spec.instance_type == instance_type


@pytest.mark.parametrize(
    ("typo", "suggested"),
    [("ml.g6.2xlarg", "ml.g6.2xlarge"), ("ml.c7i.4xl", "ml.c7i.4xlarge"), ("ml.p5e.48xlarge2", "ml.p5e.48xlarge")],
)
def test_a_typo_is_refused_with_the_closest_training_types(typo: str, suggested: str) -> None:
    result = validate_bytes(_manifest(typo), now=NOW)
    (error,) = [e for e in result.errors if e.path == "spec.resources.instanceType"]
    assert f"{typo} is not a SageMaker training instance type; closest: " in error.message
    assert suggested in error.message.split("closest: ")[1].split(", ")


def test_a_type_for_hosting_only_is_not_a_training_type() -> None:
    assert catalog.instance_type("ml.inf2.xlarge") is None  # an inference type: CreateTrainingJob refuses it
    assert "ml.inf2.xlarge" not in _botocore_training_types()


def test_every_type_in_the_price_table_is_a_valid_training_type_in_the_pinned_botocore() -> None:
    """The check that keeps the table true: a type botocore drops (or a typo in the table) fails here."""
    stale = sorted(set(catalog.tabled_instance_type_names()) - _botocore_training_types())
    assert not stale, f"not training instance types in botocore's SageMaker model: {stale}"


def test_every_figure_of_the_table_names_a_dated_source() -> None:
    table = _table()
    sources = table["sources"]
    assert isinstance(sources, dict) and table["region"] == "us-east-1"
    for key, source in sources.items():
        assert source["title"] and source["url"].startswith("https://"), key
        assert date.fromisoformat(source["date"]), key  # an ISO date (raises on anything else)
    for name, entry in table["instances"].items():  # type: ignore[attr-defined]
        if entry.get("usdPerHour") is not None:
            assert entry["usdPerHour"] > 0 and entry["priceSource"] in sources, name
        if any(entry.get(k) is not None for k in ("accelerator", "accelerators", "memoryGiB")):
            assert entry.get("hardwareSource") in sources, name
        assert set(entry) <= {
            "usdPerHour",
            "priceSource",
            "accelerator",
            "accelerators",
            "memoryGiB",
            "hardwareSource",
        }, name


@pytest.mark.parametrize("family", REQUIRED_FAMILIES)
def test_each_family_the_guidance_names_has_its_facts_and_prices(family: str) -> None:
    sizes = [n for n in catalog.training_instance_type_names() if catalog.family_of(n) == family]
    assert sizes, f"botocore's model has no {family} type any more"
    for name in sizes:
        known = catalog.instance_type(name)
        assert known is not None and known.memory_gib is not None and known.hardware_source is not None, name
        assert (known.accelerator is None) == (known.accelerators == 0), name
        if family in NO_PRICE_FOUND:
            assert known.usd_per_hour is None, f"{name} is priced now: take {family} off NO_PRICE_FOUND"
        else:
            assert known.usd_per_hour is not None and known.price_source is not None, name


def test_the_accelerators_are_the_ones_aws_names() -> None:
    def kind(name: str) -> str | None:
        known = catalog.instance_type(name)
        return known.accelerator if known else None

    assert (kind("ml.g5.2xlarge"), kind("ml.g6.2xlarge"), kind("ml.g6e.2xlarge")) == (
        "NVIDIA A10G",
        "NVIDIA L4",
        "NVIDIA L40S",
    )
    assert kind("ml.trn2.48xlarge") == "AWS Trainium2" and kind("ml.c7i.4xlarge") is None


def test_a_type_without_a_price_is_valid_and_its_cost_is_unknown() -> None:
    assert catalog.instance_type(UNPRICED) == catalog.InstanceType(UNPRICED)
    assert validate_bytes(_manifest(UNPRICED), now=NOW).valid
    assert cost_usd(UNPRICED, 2, 3600, region=REGION) is None and format_usd(None) == "unknown"
    spec = validate_bytes(_manifest(UNPRICED), now=NOW).spec
    assert spec is not None
    status = status_state(state="completed", trainingSeconds=7200, billableSeconds=2200, interruptions=1)
    state = input_state(
        manifest=manifest_state(spec),
        training=training_state(attempt=1, region=REGION, checkpointCopy=None, previousAttempts=[]),
        status=status,
    )
    job = JobBill("j", True, True, 7320, 2200, 7200, 7200, 60, 60)
    outcome = decide(state, NOW, region=REGION, bill=RunBill((job,), checkpointed=True, kept_work_seconds=7200))
    counted = outcome.figures
    assert outcome.succeeded and counted.cost_usd is None and counted.on_demand_cost_usd is None
    assert counted.savings_percent == round(100 * (1 - 2200 / 7320), 2)  # billed time against the job on-demand


def test_nothing_billed_costs_nothing_priced_or_not() -> None:
    """A run that never trained (an invalid manifest) cost $0.00, not an unknown amount."""
    assert cost_usd("", 0, 0, region=REGION) == 0.0 and cost_usd(UNPRICED, 1, 0, region=REGION) == 0.0


def test_a_priced_type_costs_its_hourly_rate() -> None:
    g6 = catalog.instance_type("ml.g6.2xlarge")
    assert g6 is not None and g6.usd_per_hour is not None
    assert cost_usd("ml.g6.2xlarge", 2, 1800, region=REGION) == round(g6.usd_per_hour * 2 * 0.5, 4)


def test_a_stack_in_a_region_the_table_does_not_price_has_unknown_costs() -> None:
    """The table's prices are us-east-1's: elsewhere they would be made-up figures."""
    assert cost_usd("ml.g5.2xlarge", 1, 3600, region="eu-west-1") is None
    assert cost_usd("ml.g5.2xlarge", 1, 3600, region=catalog.price_region()) is not None


def test_a_run_s_price_book_prices_each_region_at_its_own_price() -> None:
    """The adapter's prices (catalog.priced_by) come first; a region the book and the table leave
    out stays unknown, never priced as the table's region."""
    book = {("us-west-2", "ml.g5.2xlarge"): catalog.Price(1.212, catalog.PRICE_LIST_API, "SKU X")}
    with catalog.priced_by(book):
        assert cost_usd("ml.g5.2xlarge", 1, 3600, region="us-west-2") == 1.212
        assert cost_usd("ml.g5.2xlarge", 1, 3600, region=REGION) == 1.515  # not in the book: the table's
        assert cost_usd("ml.g5.2xlarge", 1, 3600, region="eu-west-1") is None
    assert cost_usd("ml.g5.2xlarge", 1, 3600, region="us-west-2") is None  # the book ends with its block
    tabled = catalog.tabled_price("ml.g5.2xlarge", REGION)
    assert tabled is not None and tabled.source == catalog.BUNDLED_TABLE and "2026-09-25" in tabled.detail
