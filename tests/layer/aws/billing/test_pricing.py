"""Training prices from AWS's Price List API (spotline.aws.billing.pricing): parsed from GetProducts'
real answer shape, cached per container, the bundled table as the named fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from spotline.aws.billing import pricing
from spotline.aws.common import clients
from spotline.core.billing.cost import cost_usd
from spotline.core.spec import catalog

NOW = 1_796_000_000.0  # epoch seconds (2026-12)

# One PriceList item as GetProducts returns it: a product document as a JSON string. Its structure
# is GetProducts' example in botocore's pricing model (examples-1.json: product{productFamily,
# attributes, sku}, serviceCode, terms.OnDemand.<sku>.<offer>.priceDimensions.<rate>{unit,
# pricePerUnit{USD}}, version, publicationDate); its attributes are those of AmazonSageMaker's
# "ML Instance" products (regionCode, instanceName, platoinstancetype "Training", usagetype
# USW2-Train:<type>, operation RunInstance).
G5_US_WEST_2 = json.dumps(
    {
        "product": {
            "productFamily": "ML Instance",
            "attributes": {
                "regionCode": "us-west-2",
                "location": "US West (Oregon)",
                "locationType": "AWS Region",
                "instanceName": "ml.g5.2xlarge",
                "instanceType": "ml.g5.2xlarge-Training",
                "platoinstancetype": "Training",
                "usagetype": "USW2-Train:ml.g5.2xlarge",
                "operation": "RunInstance",
                "servicecode": "AmazonSageMaker",
                "servicename": "Amazon SageMaker",
                "vCpu": "8",
                "memory": "32 GiB",
                "gpu": "1",
            },
            "sku": "Q3ZK7TEXAMPLE5GU",
        },
        "serviceCode": "AmazonSageMaker",
        "terms": {
            "OnDemand": {
                "Q3ZK7TEXAMPLE5GU.JRTCKXETXF": {
                    "priceDimensions": {
                        "Q3ZK7TEXAMPLE5GU.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "endRange": "Inf",
                            "description": "$1.212 per hour for ml.g5.2xlarge Training in US West (Oregon)",
                            "appliesTo": [],
                            "rateCode": "Q3ZK7TEXAMPLE5GU.JRTCKXETXF.6YS6EN2CT7",
                            "beginRange": "0",
                            "pricePerUnit": {"USD": "1.2120000000"},
                        }
                    },
                    "sku": "Q3ZK7TEXAMPLE5GU",
                    "effectiveDate": "2026-11-01T00:00:00Z",
                    "offerTermCode": "JRTCKXETXF",
                    "termAttributes": {},
                }
            }
        },
        "version": "20261120001500",
        "publicationDate": "2026-11-20T00:15:00Z",
    }
)
# The same type's hosting product in the same region: another component, another price.
G5_HOSTING = G5_US_WEST_2.replace('"Training"', '"Hosting"').replace("1.2120000000", "1.5150000000")


@pytest.fixture
def price_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_REGION": "us-west-2"}.items():
        monkeypatch.setenv(name, value)
    clients.reset_clients()
    pricing.forget_cached()
    # The Price List API's endpoints: us-east-1, eu-central-1, ap-south-1 (botocore's endpoints.json):
    # a us-west-2 stack asks us-east-1.
    with Stubber(clients.client("pricing", "us-east-1", config=pricing.PRICE_LIST_CONFIG)) as stubber:
        yield stubber
    clients.reset_clients()
    pricing.forget_cached()


def _expect(stubber: Stubber, instance_type: str, region: str, items: list[str]) -> None:
    expected: dict[str, Any] = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": pricing.training_filters(instance_type, region),
        "FormatVersion": "aws_v1",
    }
    stubber.add_response("get_products", {"FormatVersion": "aws_v1", "PriceList": items}, expected)


def test_the_price_is_read_from_a_real_shaped_get_products_answer(price_list: Stubber) -> None:
    _expect(price_list, "ml.g5.2xlarge", "us-west-2", [G5_HOSTING, G5_US_WEST_2])
    book = pricing.training_prices([("us-west-2", "ml.g5.2xlarge")], now=NOW)
    price = book[("us-west-2", "ml.g5.2xlarge")]
    assert (price.usd_per_hour, price.source) == (1.212, catalog.PRICE_LIST_API)  # the Training product's
    assert "SKU Q3ZK7TEXAMPLE5GU (USW2-Train:ml.g5.2xlarge)" in price.detail
    assert "2026-11-20T00:15:00Z" in price.detail
    with catalog.priced_by(book):  # a us-west-2 job at us-west-2's price: 2 instances, 30 min
        assert cost_usd("ml.g5.2xlarge", 2, 1800, region="us-west-2") == 1.212  # 1.212 * 2 * 0.5
    assert cost_usd("ml.g5.2xlarge", 2, 1800, region="us-west-2") is None  # no book: unknown there
    price_list.assert_no_pending_responses()


def test_the_second_run_in_the_container_uses_the_cache_until_it_is_a_day_old(price_list: Stubber) -> None:
    _expect(price_list, "ml.g5.2xlarge", "us-west-2", [G5_US_WEST_2])
    first = pricing.training_prices([("us-west-2", "ml.g5.2xlarge")], now=NOW)
    # No response queued: a second call of the API would fail the Stubber.
    again = pricing.training_prices([("us-west-2", "ml.g5.2xlarge")], now=NOW + 3600)
    assert again == first
    _expect(price_list, "ml.g5.2xlarge", "us-west-2", [G5_US_WEST_2.replace("1.2120000000", "1.3000000000")])
    later = pricing.training_prices([("us-west-2", "ml.g5.2xlarge")], now=NOW + 24 * 3600)
    assert later[("us-west-2", "ml.g5.2xlarge")].usd_per_hour == 1.3
    price_list.assert_no_pending_responses()


def test_when_the_api_fails_the_table_is_used_and_named_and_other_regions_stay_unknown(
    price_list: Stubber,
) -> None:
    # GetProducts' modelled errors include AccessDeniedException ("General authentication failure").
    price_list.add_client_error("get_products", "AccessDeniedException", "not signed correctly", 400)
    book = pricing.training_prices([("us-east-1", "ml.g5.2xlarge"), ("us-west-2", "ml.g5.2xlarge")], now=NOW)
    home = book[("us-east-1", "ml.g5.2xlarge")]
    assert (home.usd_per_hour, home.source) == (1.515, catalog.BUNDLED_TABLE)  # the table's us-east-1 price
    assert "Price List API could not be read: An error occurred (AccessDeniedException)" in home.detail
    assert ("us-west-2", "ml.g5.2xlarge") not in book  # never us-east-1's price for us-west-2
    assert pricing.described(book) == [
        {"region": "us-east-1", "instanceType": "ml.g5.2xlarge", "usdPerHour": 1.515, "source": "table",
         "detail": home.detail}
    ]  # fmt: skip
    price_list.assert_no_pending_responses()  # one failure: the second pair did not wait on the API again


def test_a_product_the_api_does_not_list_falls_back_to_the_table_saying_so(price_list: Stubber) -> None:
    _expect(price_list, "ml.g5.2xlarge", "us-east-1", [])
    price = pricing.training_prices([("us-east-1", "ml.g5.2xlarge")], now=NOW)[("us-east-1", "ml.g5.2xlarge")]
    assert price.source == catalog.BUNDLED_TABLE and "lists no such product" in price.detail


def test_disagreeing_products_are_not_guessed_between() -> None:
    other = G5_US_WEST_2.replace("1.2120000000", "1.4000000000").replace("Q3ZK7TEXAMPLE5GU", "ZZZZZZEXAMPLE5GU")
    assert pricing.training_price_of([G5_US_WEST_2, other], "ml.g5.2xlarge", "us-west-2") is None
    assert pricing.training_price_of([G5_US_WEST_2], "ml.g5.2xlarge", "us-east-1") is None  # another region's


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-west-2", "us-east-1"),
        ("eu-west-1", "eu-central-1"),
        ("ap-northeast-1", "ap-south-1"),
        ("ap-south-1", "ap-south-1"),
    ],
)
def test_the_call_goes_to_a_region_with_a_price_list_endpoint(region: str, endpoint: str) -> None:
    assert pricing.price_list_region(region) == endpoint
