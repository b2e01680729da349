"""On-demand SageMaker training prices per region, read from AWS's Price List API
(`pricing:GetProducts`), for the run's cost figures (`catalog.priced_by`).

Where the API is: botocore's endpoints.json lists `api.pricing` in us-east-1, eu-central-1 and
ap-south-1 only, so the call goes to the nearest of those, whatever the stack's region; the
product's region is a filter (`regionCode`).

Cached per Lambda container for a day: on-demand prices change rarely, RecordOutcome runs once
per run, and a container's cache already spares the API every call but the first of each
(region, type) per day. A shared cache (DynamoDB or S3, with a TTL) would save a few calls a day at
the price of a table, its IAM and its failure modes: not worth it. When the API cannot be reached
(or refuses) the bundled table is the fallback, in its own region only; when the API lists no
such product, the table's price is used if it has one. Every price says which source it came
from (`Price.source`, `Price.detail`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from spotline.aws.common.clients import client
from spotline.aws.common.observability import logger
from spotline.core.billing.billing import RunBill
from spotline.core.spec.catalog import PRICE_LIST_API, Price, tabled_price
from spotline.core.state import JobSummary

SERVICE_CODE = "AmazonSageMaker"
PRICE_LIST_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
"""botocore's endpoints.json, partition aws, service `api.pricing`: these three endpoints only."""
TRAINING = "Training"
"""The `platoinstancetype` of SageMaker's training instances in its Price List products."""
CACHE_SECONDS = 24 * 3600
PRICE_LIST_CONFIG = Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=3, read_timeout=10)
"""Two tries, short timeouts: a Price List outage must not take RecordOutcome's 60 s (the table is
the fallback)."""

_cache: dict[tuple[str, str], tuple[float, Price | None]] = {}
"""(region, type) -> (when read, in epoch seconds; the API's price, None: it lists no such product)."""


def price_list_region(region: str) -> str:
    """The Price List API endpoint nearest to `region`."""
    if region in PRICE_LIST_REGIONS:
        return region
    if region.startswith(("eu-", "me-", "af-", "il-")):
        return "eu-central-1"
    if region.startswith("ap-"):
        return "ap-south-1"
    return "us-east-1"


def training_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """GetProducts filters for one training instance type in one region (TERM_MATCH: "Returns
    only products that match both the given filter field and the given value", Filter.Type)."""
    return [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": TRAINING},
    ]


def training_price_of(price_list: Iterable[str], instance_type: str, region: str) -> Price | None:
    """The on-demand hourly price in a GetProducts PriceList (each item a product document as a JSON
    string: `product.attributes`, `terms.OnDemand.<offer>.priceDimensions.<rate>.pricePerUnit.USD`),
    for `instance_type`'s training in `region`; None when no product has one, or when several
    disagree (ambiguous: another source is better than a guess)."""
    found: dict[float, str] = {}
    for item in price_list:
        document = json.loads(item)
        product = document.get("product") or {}
        attributes = product.get("attributes") or {}
        if (attributes.get("instanceName"), attributes.get("regionCode"), attributes.get("platoinstancetype")) != (
            instance_type,
            region,
            TRAINING,
        ):
            continue
        for offer in ((document.get("terms") or {}).get("OnDemand") or {}).values():
            for dimension in (offer.get("priceDimensions") or {}).values():
                usd = (dimension.get("pricePerUnit") or {}).get("USD")
                if dimension.get("unit") != "Hrs" or usd is None or float(usd) <= 0:
                    continue
                found[float(usd)] = (
                    f"AWS Price List API, {SERVICE_CODE} SKU {product.get('sku')} "
                    f"({attributes.get('usagetype')}), published {document.get('publicationDate')}"
                )
    if len(found) != 1:
        if found:
            logger.warning(
                "Several Price List prices for one type: not used",
                extra={"instanceType": instance_type, "region": region, "prices": sorted(found)},
            )
        return None
    ((usd, detail),) = found.items()
    return Price(usd, PRICE_LIST_API, detail)


def read_training_price(instance_type: str, region: str) -> Price | None:
    """The Price List API's price (raises ClientError or BotoCoreError when it cannot answer)."""
    pricing = client("pricing", price_list_region(region), config=PRICE_LIST_CONFIG)
    items: list[str] = []
    pages = pricing.get_paginator("get_products").paginate(
        ServiceCode=SERVICE_CODE, Filters=training_filters(instance_type, region), FormatVersion="aws_v1"
    )
    for page in pages:
        items += page.get("PriceList") or []
    return training_price_of(items, instance_type, region)


def training_prices(pairs: Iterable[tuple[str, str]], *, now: float) -> dict[tuple[str, str], Price]:
    """The price of each (region, instance type): the Price List API's (cached), else the bundled
    table's, saying why; a pair neither knows is left out (its cost is unknown). `now`: epoch
    seconds, for the cache's age. Once the API fails, the rest are not asked (one outage, one wait)."""
    book: dict[tuple[str, str], Price] = {}
    unreachable: str | None = None
    for region, instance_type in sorted({(r, t) for r, t in pairs if r and t}):
        cached = _cache.get((region, instance_type))
        why = "the AWS Price List API lists no such product"
        if cached is not None and now - cached[0] < CACHE_SECONDS:
            price = cached[1]
        elif unreachable is not None:
            price, why = None, unreachable
        else:
            try:
                price = read_training_price(instance_type, region)
            except (ClientError, BotoCoreError) as exc:
                price = None
                why = unreachable = f"the AWS Price List API could not be read: {exc}"[:300]
                logger.warning("Price List API not read: the bundled table is the fallback", extra={"error": why})
            else:
                _cache[(region, instance_type)] = (now, price)
        found = price or _fallback(instance_type, region, why)
        if found is not None:
            book[(region, instance_type)] = found
    return book


def run_prices(
    summary: JobSummary | None, bill: RunBill | None, *, region: str, now: float
) -> dict[tuple[str, str], Price]:
    """The prices one run's figures need: each type it was billed for (and the manifest's, from its
    summary), in the stack's region and in each region a job ran in (a job is priced where it ran)."""
    jobs = bill.jobs if bill is not None else ()
    types = {job.instance_type for job in jobs} | ({summary.instance_type} if summary else set())
    regions = {region} | {job.region for job in jobs if job.region}
    return training_prices([(r, t) for r in regions for t in types], now=now)


def _fallback(instance_type: str, region: str, why: str) -> Price | None:
    tabled = tabled_price(instance_type, region)
    if tabled is None:
        return None
    return Price(tabled.usd_per_hour, tabled.source, f"{tabled.detail}; {why}")


def described(book: Mapping[tuple[str, str], Price]) -> list[dict[str, Any]]:
    """The prices a run's figures used, for its report: region, type, price and source."""
    return [
        {"region": region, "instanceType": instance_type, **price.to_dict()}
        for (region, instance_type), price in sorted(book.items())
    ]


def forget_cached() -> None:
    """Forget the container's prices (tests and the local stack, between stacks)."""
    _cache.clear()
