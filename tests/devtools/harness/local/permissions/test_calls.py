"""What a call asks IAM for: actions from the Service Authorization Reference, resource ARNs in the
call's region, and the dependent actions its parameters add (each rule's AWS source is cited in
spotline_dev.harness.local.permissions.calls)."""

from __future__ import annotations

from typing import Any

import pytest

from spotline_dev.harness.local.permissions.calls import Call, UnknownCall, needs_of

ACCOUNT = "123456789012"


def needs(service: str, operation: str, region: str = "us-east-1", **params: Any) -> set[tuple[str, str]]:
    return {(n.action, n.resource) for n in needs_of(Call(service, operation, params, region, ACCOUNT))}


def test_a_tagged_put_object_also_needs_put_object_tagging() -> None:
    assert needs("s3", "PutObject", Bucket="b", Key="proposed/a.json", Tagging="spotline%3Achanged-by=x") == {
        ("s3:PutObject", "arn:aws:s3:::b/proposed/a.json"),
        ("s3:PutObjectTagging", "arn:aws:s3:::b/proposed/a.json"),
    }
    assert needs("s3", "PutObject", Bucket="b", Key="k") == {("s3:PutObject", "arn:aws:s3:::b/k")}


def test_the_request_tags_are_condition_keys_of_a_put_object() -> None:
    (put, _tagging) = needs_of(
        Call("s3", "PutObject", {"Bucket": "b", "Key": "k", "Tagging": "a%3Ab=c%2Cd"}, "us-east-1", ACCOUNT)
    )
    assert dict(put.context)["s3:RequestObjectTag/a:b"] == "c,d"


def test_s3_reads_are_authorized_as_their_actions() -> None:
    assert needs("s3", "HeadObject", Bucket="b", Key="k") == {("s3:GetObject", "arn:aws:s3:::b/k")}
    assert needs("s3", "HeadObject", Bucket="b", Key="k", VersionId="v") == {
        ("s3:GetObjectVersion", "arn:aws:s3:::b/k")
    }
    assert needs("s3", "ListObjectsV2", Bucket="b", Prefix="p/") == {("s3:ListBucket", "arn:aws:s3:::b")}
    assert needs("s3", "ListObjectVersions", Bucket="b") == {("s3:ListBucketVersions", "arn:aws:s3:::b")}


def test_a_copy_reads_its_source() -> None:
    assert needs("s3", "CopyObject", Bucket="to", Key="k2", CopySource={"Bucket": "from", "Key": "k1"}) == {
        ("s3:PutObject", "arn:aws:s3:::to/k2"),
        ("s3:GetObject", "arn:aws:s3:::from/k1"),
    }


def test_efs_mount_target_security_groups_need_the_network_interface_attribute() -> None:
    assert needs("efs", "DescribeMountTargetSecurityGroups", MountTargetId="fsmt-1") >= {
        ("ec2:DescribeNetworkInterfaceAttribute", "*"),
    }


def test_resources_are_in_the_region_of_the_call() -> None:
    assert needs("sagemaker", "DescribeTrainingPlan", region="us-west-2", TrainingPlanName="p") == {
        ("sagemaker:DescribeTrainingPlan", f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:training-plan/p")
    }


def test_a_create_that_passes_a_role_and_tags_needs_pass_role_and_add_tags() -> None:
    role = f"arn:aws:iam::{ACCOUNT}:role/spotline/media"
    found = needs_of(
        Call(
            "sagemaker",
            "CreateModel",
            {"ModelName": "m", "ExecutionRoleArn": role, "Tags": [{"Key": "spotline:team", "Value": "media"}]},
            "us-east-1",
            ACCOUNT,
        )
    )
    model = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model/m"
    assert {(n.action, n.resource) for n in found} == {
        ("sagemaker:CreateModel", model),
        ("sagemaker:AddTags", model),
        ("iam:PassRole", role),
    }
    pass_role = next(n for n in found if n.action == "iam:PassRole")
    assert dict(pass_role.context)["iam:PassedToService"] == "sagemaker.amazonaws.com"


def test_lambda_invoke_is_invoke_function_and_get_caller_identity_needs_nothing() -> None:
    assert needs("lambda", "Invoke", FunctionName="f") == {
        ("lambda:InvokeFunction", f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f")
    }
    assert needs("sts", "GetCallerIdentity") == set()


def test_a_call_whose_resource_cannot_be_named_is_an_error() -> None:
    with pytest.raises(UnknownCall, match="no parameter names the resource of sagemaker:DescribeTrainingJob"):
        needs("sagemaker", "DescribeTrainingJob")
