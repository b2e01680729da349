"""AWS API requests that arrive over HTTP, answered by the local stack (`spotline local`).

An in-process boto3 client sends each request through botocore's `before-send` hook, where the
local stack answers it: the injected faults first, then the Batch/SageMaker, Price List and file
system stand-ins, then moto. The gateway gives a request from another process (the aws CLI, the
`spotline` commands, boto3 with `AWS_ENDPOINT_URL`) the same path: it finds the service from the
request's SigV4 credential scope and the operation from the protocol (X-Amz-Target, the query's
Action, or the REST path), points the request at the AWS endpoint of that service and region (what
moto's URL patterns and the stand-ins' region checks expect), and emits the same event a client of
the stack's session would. Nothing is parsed or answered twice: the answer's bytes go back as the
service's handler wrote them.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import botocore.loaders
from botocore.awsrequest import AWSPreparedRequest
from botocore.compat import HTTPHeaders
from botocore.hooks import first_non_none_response

_SCOPE = re.compile(r"Credential=[^/,]+/\d{8}/(?P<region>[a-z0-9-]+)/(?P<service>[a-z0-9.-]+)/aws4_request")
_URI_PARAMETER = re.compile(r"\{([^}]+)\}")
_HOP_BY_HOP = frozenset({"host", "connection", "keep-alive", "transfer-encoding", "expect"})


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


class GatewayError(Exception):
    """A request the local stack cannot route: answered 400 with the reason."""


@cache
def service_of_signing_name() -> dict[str, str]:
    """Each SigV4 signing name to the botocore service that uses it: the service named so when
    there is one (`sagemaker`, not `sagemaker-runtime`), else the one whose endpoint prefix it is
    (`states` -> stepfunctions, `monitoring` -> cloudwatch, `elasticfilesystem` -> efs)."""
    session = boto3.session.Session()._session
    loader = session.get_component("data_loader")
    by_name: dict[str, str] = {}
    by_prefix: dict[str, str] = {}
    for service in loader.list_available_services("service-2"):
        metadata = loader.load_service_model(service, "service-2")["metadata"]
        signing = metadata.get("signingName") or metadata["endpointPrefix"]
        if signing == service:
            by_name[signing] = service
        elif metadata["endpointPrefix"] == signing:
            by_prefix.setdefault(signing, service)
    return by_prefix | by_name


@dataclass(frozen=True)
class _Route:
    """A REST operation's requestUri and the query keys and headers a request of it must carry."""

    name: str
    method: str
    path: re.Pattern[str]
    query: frozenset[str]  # fixed in the requestUri (`?uploads`) or required querystring members
    headers: frozenset[str]  # required header members (lower case)
    literal: int  # literal characters of the path: the more, the more specific


@cache
def _routes(service: str) -> tuple[_Route, ...]:
    """The REST routes of a service, from the model as botocore ships it. A fresh loader: the stack's
    shared one holds S3's model as its clients rewrote it (`/{Bucket}` stripped from each URI)."""
    model = botocore.loaders.create_loader().load_service_model(service, "service-2")
    shapes, routes = model["shapes"], []
    for name, operation in model["operations"].items():
        http = operation.get("http", {})
        path, _, fixed = str(http.get("requestUri", "/")).partition("?")
        parts = _URI_PARAMETER.split(path)  # literal, parameter name, literal, ...
        regex = "".join(
            re.escape(part) if i % 2 == 0 else (".+" if part.endswith("+") else "[^/]+") for i, part in enumerate(parts)
        )
        query = {key.partition("=")[0] for key in fixed.split("&") if key}
        headers = set()
        shape = shapes.get(operation.get("input", {}).get("shape", ""), {})
        for member in shape.get("required", []):
            where = shape["members"][member]
            if where.get("location") == "querystring":
                query.add(where.get("locationName", member))
            elif where.get("location") == "header":
                headers.add(where.get("locationName", member).lower())
        literal = sum(len(part) for part in parts[::2])
        routes.append(
            _Route(
                name,
                http.get("method", "POST").upper(),
                re.compile(f"^{regex}/?$"),
                frozenset(query),
                frozenset(headers),
                literal,
            )
        )
    return tuple(routes)


class Gateway:
    """Routes raw AWS requests into the before-send chain of the local stack's session."""

    def __init__(self, session: boto3.Session, default_region: str) -> None:
        self.session, self.default_region = session, default_region
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def _client(self, service: str, region: str) -> Any:
        with self._lock:
            key = (service, region)
            if key not in self._clients:
                self._clients[key] = self.session.client(service, region_name=region)  # type: ignore[call-overload]
            return self._clients[key]

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        scope = _SCOPE.search(headers.get("authorization", ""))
        if scope is None:
            raise GatewayError("the request is not signed with AWS SigV4 (set any AWS_ACCESS_KEY_ID/SECRET)")
        service = service_of_signing_name().get(scope["service"])
        if service is None:
            raise GatewayError(f"no AWS service signs as {scope['service']!r}")
        region = scope["region"] if scope["region"] != "aws-global" else self.default_region
        client = self._client(service, region)
        model = client.meta.service_model
        operation = _operation(model, method, target, headers, body)
        split = urlsplit(target)
        endpoint = urlsplit(client.meta.endpoint_url)
        url = endpoint._replace(path=split.path, query=split.query).geturl()
        forwarded = HTTPHeaders()
        for key, value in headers.items():
            if key.lower() not in _HOP_BY_HOP:
                forwarded[key] = value
        forwarded["Host"] = endpoint.netloc
        request = AWSPreparedRequest(method, url, forwarded, body, stream_output=False)
        event = f"before-send.{model.service_id.hyphenize()}.{operation}"
        response = first_non_none_response(client.meta.events.emit(event, request=request))
        if response is None:
            raise GatewayError(f"{service} {operation} is not served by the local stack")
        content = response.content or b""
        answered = {str(k): str(v) for k, v in response.headers.items() if str(k).lower() not in _HOP_BY_HOP}
        return Answer(int(response.status_code), answered, content)


def _operation(model: Any, method: str, target: str, headers: dict[str, str], body: bytes) -> str:
    """The operation a request calls: X-Amz-Target (JSON), Action (query), or the REST route
    with the most literal characters that matches the method and path."""
    protocol = model.metadata["protocol"]
    amz_target = headers.get("x-amz-target")
    if amz_target:
        return amz_target.rpartition(".")[2]
    split = urlsplit(target)
    query = parse_qs(split.query, keep_blank_values=True)
    if protocol in ("query", "ec2"):
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True) if body else {}
        action = (form.get("Action") or query.get("Action") or [""])[0]
        if action:
            return action
        raise GatewayError("a query-protocol request without an Action")
    best: tuple[int, str] | None = None
    for route in _routes(model.service_name):
        carries = route.query <= set(query) and route.headers <= set(headers)
        if route.method != method.upper() or not carries or not route.path.match(split.path or "/"):
            continue
        score = route.literal + 100 * (len(route.query) + len(route.headers))  # what it requires, it is
        if best is None or score > best[0]:
            best = (score, route.name)
    if best is None:
        raise GatewayError(f"no {model.service_name} operation is {method} {split.path}")
    return best[1]
