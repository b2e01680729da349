"""How the gateway names the operation of a REST request: the route whose path matches and whose
required query keys and headers the request carries, the most specific first (S3's object paths
are shared by a dozen operations)."""

from __future__ import annotations

import botocore.session
import pytest

from spotline_dev.harness.local.gateway import GatewayError, _operation

S3 = botocore.session.get_session().get_service_model("s3")


@pytest.mark.parametrize(
    ("method", "target", "headers", "operation"),
    [
        ("PUT", "/b/k", {}, "PutObject"),
        ("PUT", "/b/k", {"x-amz-copy-source": "/a/b"}, "CopyObject"),
        ("PUT", "/b/k?partNumber=1&uploadId=u", {}, "UploadPart"),
        ("DELETE", "/b/k", {}, "DeleteObject"),
        ("DELETE", "/b/k?uploadId=u", {}, "AbortMultipartUpload"),
        ("GET", "/b/k", {}, "GetObject"),
        ("GET", "/b/k?uploadId=u", {}, "ListParts"),
        ("HEAD", "/b", {}, "HeadBucket"),
        ("HEAD", "/b/k", {}, "HeadObject"),
        ("GET", "/b?list-type=2", {}, "ListObjectsV2"),
        ("POST", "/b/k?uploads", {}, "CreateMultipartUpload"),
    ],
)
def test_s3_requests_are_named_by_the_route_they_carry(
    method: str, target: str, headers: dict[str, str], operation: str
) -> None:
    assert _operation(S3, method, target, headers, b"") == operation


def test_the_routes_do_not_depend_on_what_s3_clients_did_to_the_shared_model() -> None:
    """botocore strips `/{Bucket}` from S3's URIs in the loaded model the first time a client
    calls; the gateway reads its own copy, so a bucket's HEAD is still HeadBucket after that."""
    client = botocore.session.get_session().create_client(
        "s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    client.meta.service_model.operation_model("HeadBucket")  # the shared model, as a client reads it
    assert _operation(client.meta.service_model, "HEAD", "/b", {}, b"") == "HeadBucket"


def test_a_path_no_operation_has_is_refused_naming_it() -> None:
    with pytest.raises(GatewayError, match="no s3 operation is PATCH /b"):
        _operation(S3, "PATCH", "/b", {}, b"")
