"""What the stand-in's SageMaker reads and writes in the local account, straight from moto's
backends (as the service itself would, below the API): S3 objects a transform job reads and
writes, and the SageMaker models it may name. Not through boto3: the stand-in answers inside a
botocore hook, holding its lock."""

from __future__ import annotations

from moto.s3 import models as moto_s3_models
from moto.sagemaker import models as moto_sagemaker_models
from moto.utilities.utils import get_partition


class MotoObjects:
    def __init__(self, account: str, region: str) -> None:
        self.account, self.region = account, region

    def _s3(self, bucket: str) -> object:
        backends = moto_s3_models.s3_backends
        partition, account = backends.bucket_accounts.get(bucket, (get_partition(self.region), self.account))
        return backends[account][partition]

    def read(self, bucket: str, key: str) -> bytes | None:
        try:
            stored = self._s3(bucket).get_object(bucket, key)  # type: ignore[attr-defined]
        except Exception:  # no such bucket or key: nothing there, as a 404 would say
            return None
        return None if stored is None else bytes(stored.value)

    def write(self, bucket: str, key: str, body: bytes) -> None:
        self._s3(bucket).put_object(bucket, key, body)  # type: ignore[attr-defined]

    def keys(self, bucket: str, prefix: str) -> list[str]:
        try:
            found = self._s3(bucket).get_bucket(bucket)  # type: ignore[attr-defined]
        except Exception:
            return []
        return sorted(k for k in found.keys if k.startswith(prefix) and not k.endswith("/"))

    def models(self) -> set[str]:
        backend = moto_sagemaker_models.sagemaker_backends[self.account][self.region]
        return {model.model_name for model in backend.list_models()}
