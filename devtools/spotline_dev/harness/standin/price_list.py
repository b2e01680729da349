"""AWS's Price List API (GetProducts) for the local stack: SageMaker training products, one per
(region, instance type) of a price table, in the shape the API answers (moto has no pricing
backend: it answers 404 "Not yet implemented").

The product documents follow GetProducts' example in botocore's pricing model
(examples-1.json: `product{productFamily, attributes, sku}`, `serviceCode`,
`terms.OnDemand.<sku>.<offer>.priceDimensions.<rate>{unit, pricePerUnit{USD}, ...}`, `version`,
`publicationDate`) with the attributes of AmazonSageMaker's "ML Instance" products (regionCode,
instanceName, platoinstancetype, usagetype `<prefix>-Train:<type>`, operation RunInstance)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast
from urllib.parse import urlsplit

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from spotline_dev.harness.standin.base.http_answers import (
    ApiError,
    StandInAnswerInvalid,
    answer,
    json_body,
    request_problems,
    shape,
    shape_problems,
    target_of,
)

ENDPOINT_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
"""botocore's endpoints.json, partition aws, `api.pricing`: the API answers in these regions only."""
ON_DEMAND_OFFER = "JRTCKXETXF"  # the OnDemand offer term code of GetProducts' example answer
HOURLY_RATE = "6YS6EN2CT7"  # the rate code of its price dimension
_USAGE_PREFIXES = {
    "us-east-1": "USE1",
    "us-east-2": "USE2",
    "us-west-1": "USW1",
    "us-west-2": "USW2",
    "eu-west-1": "EU",
}


class PriceListStandIn:
    """GetProducts over `prices` ((region, instance type) -> USD per instance-hour)."""

    def __init__(self, prices: Mapping[tuple[str, str], float], published: datetime) -> None:
        self.prices = dict(prices)
        self.published = published
        self.calls: list[dict[str, Any]] = []  # each GetProducts request, for tests
        self.failing: str | None = None  # an error code every call answers (an outage), if set
        self._serial = 0

    def install(self, session: boto3.Session) -> None:
        session.events.register_first(
            "before-send.pricing",
            cast(Callable[..., None], self._on_pricing),  # a before-send handler returns a response
            unique_id=f"standin-pricing-{id(self)}",
        )

    def _on_pricing(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        operation = target_of(request).rpartition(".")[2]
        if operation != "GetProducts":
            return None
        host = urlsplit(request.url).netloc
        if not any(f".{region}." in f".{host}." for region in ENDPOINT_REGIONS):
            return None  # no such endpoint: left unanswered, as AWS has none there
        body = json_body(request)
        self.calls.append(body)
        self._serial += 1
        return answer(request, "json", self._serial, lambda: self._run(body))

    def _run(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.failing is not None:
            # Stand-in: an outage a test asks for (`failing`), answered with one of GetProducts' modelled
            # errors, e.g. ThrottlingException (HTTP 400) or InternalErrorException (HTTP 500):
            # AWS: pricing InternalErrorException: "An error on the server occurred during the
            # processing of your request."
            raise ApiError(self.failing, "Price List stand-in outage", 500 if "Internal" in self.failing else 400)
        refused = request_problems(body, shape("pricing", "GetProducts", "input"))
        if refused:
            # AWS: pricing InvalidParameterException: "One or more parameters had an invalid value."
            raise ApiError("InvalidParameterException", "; ".join(refused[:5]))
        result = self.get_products(body)
        problems = shape_problems(result, shape("pricing", "GetProducts", "output"), "GetProducts")
        if problems:
            raise StandInAnswerInvalid("; ".join(problems[:5]))
        return result

    def get_products(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The products that match (botocore's pricing model, GetProducts: "Returns a list of all
        products that match the filter criteria"; GetProductsRequest.Filters: "only products that
        match all filters are returned"; Filter.Type TERM_MATCH: "Returns only products that match
        both the given filter field and the given value"). One page, no NextToken: the stand-in's
        lists are short."""
        if body.get("ServiceCode") != "AmazonSageMaker":
            return {"FormatVersion": "aws_v1", "PriceList": []}
        filters = [(f["Field"], f["Value"]) for f in body.get("Filters") or [] if f.get("Type") == "TERM_MATCH"]
        documents = [self.product(region, kind, usd) for (region, kind), usd in sorted(self.prices.items())]
        matching = [
            d
            for d in documents
            if all(
                {**d["product"]["attributes"], "productFamily": d["product"]["productFamily"]}.get(field) == value
                for field, value in filters
            )
        ]
        # GetProductsResponse.FormatVersion: "The format version of the response. For example, aws_v1."
        return {"FormatVersion": "aws_v1", "PriceList": [json.dumps(d) for d in matching]}

    def product(self, region: str, instance_type: str, usd: float) -> dict[str, Any]:
        """One AmazonSageMaker training product document, as GetProducts' PriceList holds it."""
        sku = base64.b32encode(hashlib.sha256(f"{region}/{instance_type}/Training".encode()).digest())[:16].decode()
        usage = f"{_USAGE_PREFIXES.get(region, region.upper())}-Train:{instance_type}"
        offer, rate = f"{sku}.{ON_DEMAND_OFFER}", f"{sku}.{ON_DEMAND_OFFER}.{HOURLY_RATE}"
        published = self.published.strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "product": {
                "productFamily": "ML Instance",
                "attributes": {
                    "regionCode": region,
                    "locationType": "AWS Region",
                    "instanceName": instance_type,
                    "instanceType": f"{instance_type}-Training",
                    "platoinstancetype": "Training",
                    "usagetype": usage,
                    "operation": "RunInstance",
                    "servicecode": "AmazonSageMaker",
                    "servicename": "Amazon SageMaker",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    offer: {
                        "priceDimensions": {
                            rate: {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "description": f"${usd} per hour for {instance_type} Training in {region}",
                                "appliesTo": [],
                                "rateCode": rate,
                                "beginRange": "0",
                                "pricePerUnit": {"USD": f"{usd:.10f}"},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": published,
                        "offerTermCode": ON_DEMAND_OFFER,
                        "termAttributes": {},
                    }
                }
            },
            "version": self.published.strftime("%Y%m%d%H%M%S"),
            "publicationDate": published,
        }
