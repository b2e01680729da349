"""The local Price List API (spotline_dev.harness.standin.price_list): GetProducts answers botocore parses
and Spotline's adapter reads, matching every TERM_MATCH filter, in the API's endpoint regions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from spotline.aws.billing import pricing
from spotline_dev.harness.standin.price_list import PriceListStandIn

PUBLISHED = datetime(2026, 12, 1, tzinfo=UTC)


def _client(stand_in: PriceListStandIn, region: str = "us-east-1") -> Any:
    session = boto3.Session(aws_access_key_id="t", aws_secret_access_key="t", region_name=region)
    stand_in.install(session)
    return session.client("pricing")


def test_get_products_answers_the_training_product_of_a_type_in_a_region() -> None:
    stand_in = PriceListStandIn(
        {("us-west-2", "ml.g5.2xlarge"): 1.212, ("us-east-1", "ml.g5.2xlarge"): 1.515}, PUBLISHED
    )
    answer = _client(stand_in).get_products(
        ServiceCode="AmazonSageMaker", Filters=pricing.training_filters("ml.g5.2xlarge", "us-west-2")
    )
    assert answer["FormatVersion"] == "aws_v1" and len(answer["PriceList"]) == 1
    price = pricing.training_price_of(answer["PriceList"], "ml.g5.2xlarge", "us-west-2")
    assert price is not None and price.usd_per_hour == 1.212
    assert "USW2-Train:ml.g5.2xlarge" in price.detail and "2026-12-01T00:00:00Z" in price.detail
    nothing = _client(stand_in).get_products(
        ServiceCode="AmazonSageMaker", Filters=pricing.training_filters("ml.g6.2xlarge", "us-west-2")
    )
    assert nothing["PriceList"] == []


def test_an_outage_answers_a_modelled_error() -> None:
    stand_in = PriceListStandIn({}, PUBLISHED)
    stand_in.failing = "AccessDeniedException"
    with pytest.raises(ClientError, match="AccessDeniedException"):
        _client(stand_in, "eu-central-1").get_products(ServiceCode="AmazonSageMaker")


def test_a_request_the_model_refuses_is_refused() -> None:
    """GetProductsMaxResults is 1..100; botocore checks the minimum only, the service the rest."""
    with pytest.raises(ClientError, match="InvalidParameterException"):
        _client(PriceListStandIn({}, PUBLISHED)).get_products(ServiceCode="AmazonSageMaker", MaxResults=101)
