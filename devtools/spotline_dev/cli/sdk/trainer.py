"""The SageMaker Python SDK's side of `spotline from-trainer`: load a `ModelTrainer` from a Python
file and build, offline, the CreateTrainingJob request the SDK itself would send (the payload
`sagemaker.train.aws_batch.TrainingQueue.submit` queues on Batch).

Developer side only: the SDK (and pandas, scipy, ... behind it) is imported here, lazily, and
never by the layer or a Lambda package (tests/architecture checks it).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spotline.core.training.training_request import CODE_DIRECTORY_HYPERPARAMETER, CODE_PROGRAM_HYPERPARAMETER
from spotline_dev.cli.sdk.request_to_manifest import TrainerNotConvertible

DEFAULT_OBJECT = "trainer"
# With these the SDK builds the request without a call to AWS: no IAM lookup of the role, no
# SageMaker config file from the machine or S3 (an empty one instead), and should it still try
# (a default bucket, an upload), credentials that open nothing and a proxy that refuses at once.
DEAD_END = "http://127.0.0.1:9"  # the discard port: nothing listens
OFFLINE_ENVIRONMENT = {
    "SAGEMAKER_VALIDATE_ROLE": "false",
    "AWS_ACCESS_KEY_ID": "spotline-offline",
    "AWS_SECRET_ACCESS_KEY": "spotline-offline",
    "AWS_SESSION_TOKEN": "",
    "AWS_EC2_METADATA_DISABLED": "true",
    "HTTPS_PROXY": DEAD_END,
    "HTTP_PROXY": DEAD_END,
    "NO_PROXY": "",
}
CONFIG_OVERRIDES = ("SAGEMAKER_ADMIN_CONFIG_OVERRIDE", "SAGEMAKER_USER_CONFIG_OVERRIDE")


class TrainerFileError(ValueError):
    """The file cannot be read or run, or does not define the ModelTrainer named."""


@contextlib.contextmanager
def offline_sdk() -> Iterator[None]:
    """The SDK's settings for building a request without AWS, restored afterwards."""
    with tempfile.TemporaryDirectory(prefix="spotline-sdk-") as folder:
        empty_config = Path(folder, "config.yaml")
        empty_config.write_text("{}\n")
        settings = {**OFFLINE_ENVIRONMENT, **dict.fromkeys(CONFIG_OVERRIDES, str(empty_config))}
        if not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
            settings["AWS_DEFAULT_REGION"] = "us-east-1"  # the request does not depend on it
        saved = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def load_trainer(reference: str) -> tuple[Any, list[Any] | None]:
    """`path/to/file.py[:name]` -> (the ModelTrainer `name`, default `trainer`; the file's
    `inputs` list, if any: channels given to TrainingQueue.submit(inputs=...)). Runs the file:
    call it inside `offline_sdk()`."""
    from sagemaker.train import ModelTrainer  # noqa: PLC0415 (the SDK only when asked: ~5 s)

    path, _, name = reference.partition(":")
    if not Path(path).is_file():
        raise TrainerFileError(f"{path}: no such file")
    folder = str(Path(path).resolve().parent)
    sys.path.insert(0, folder)  # as `python FILE` does: the file imports its neighbours
    try:
        namespace = runpy.run_path(path, run_name="__spotline_trainer__")
    except Exception as exc:
        raise TrainerFileError(f"{path}: running it failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(folder)
    name = name or DEFAULT_OBJECT
    trainer = namespace.get(name)
    if not isinstance(trainer, ModelTrainer):
        found = type(trainer).__name__ if name in namespace else "nothing"
        raise TrainerFileError(f"{path}: {name} must be a sagemaker.train.ModelTrainer, found {found}")
    inputs = namespace.get("inputs")
    return trainer, list(inputs) if isinstance(inputs, list | tuple) else None


def training_job_request(trainer: Any, inputs: list[Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The trainer's CreateTrainingJob request as the SDK builds it (call inside `offline_sdk()`),
    and what in the trainer, outside the request, a manifest cannot carry.

    Training code from S3 (`SourceCode(source_dir="s3://.../sourcedir.tar.gz", entry_script=...)`)
    is given as the framework containers' two hyperparameters, as the SDK's HyperparameterTuner
    does (sagemaker/train/tuner.py): ModelTrainer's own way uploads driver scripts, which needs S3."""
    problems = _unsupported(trainer)
    code = _code_of(trainer.source_code, problems)
    local_data = _not_in_s3([*(trainer.input_data_config or []), *(inputs or [])])
    copy = trainer.model_copy(
        update={"source_code": None, "distributed": None, "hyperparameters": dict(trainer.hyperparameters or {})}
    )
    if copy.output_data_config is None or not copy.output_data_config.s3_output_path:
        problems.append("output_data_config: give the trainer an explicit OutputDataConfig(s3_output_path=...)")
        raise TrainerNotConvertible(problems)  # without it the SDK would look up a default bucket in S3
    if local_data:
        raise TrainerNotConvertible(problems + local_data)  # building the request would upload it
    try:
        request: dict[str, Any] = copy._create_training_job_args(input_data_config=inputs, boto3=True)
    except Exception as exc:  # the SDK's own refusal, or a call to AWS it tried and could not make
        problem = f"the SDK could not build the request offline: {type(exc).__name__}: {exc}"
        raise TrainerNotConvertible([problem]) from exc
    if code and not problems:
        request.setdefault("HyperParameters", {}).update(code)
    return request, problems


def _unsupported(trainer: Any) -> list[str]:
    problems = []
    if trainer.distributed is not None:
        problems.append(
            "distributed: ModelTrainer runs distributed training through its own uploaded driver scripts; "
            "Spotline does not upload them (launch torchrun from your entry point instead)"
        )
    if str(getattr(trainer, "training_mode", "")).endswith("LOCAL_CONTAINER"):
        problems.append("training_mode: a local-container trainer runs on this machine, not on SageMaker")
    return problems


def _not_in_s3(channels: list[Any]) -> list[str]:
    """Channels whose data is not in S3: the SDK would upload a local path to a default bucket,
    and a manifest reads S3 prefixes only."""
    problems = []
    for channel in channels:
        source = getattr(channel, "data_source", None)
        s3 = getattr(source, "s3_data_source", None) if not isinstance(source, str) else None
        uri = source if isinstance(source, str) else getattr(source, "s3_uri", None) or getattr(s3, "s3_uri", None)
        if not (isinstance(uri, str) and uri.startswith("s3://")):
            problems.append(
                f"input {getattr(channel, 'channel_name', '?')}: {uri or type(source).__name__} is not in S3; "
                "a manifest reads S3 prefixes (upload the data first)"
            )
    return problems


def _code_of(source_code: Any, problems: list[str]) -> dict[str, str] | None:
    if source_code is None:
        return None
    directory, entry = source_code.source_dir, source_code.entry_script
    if not (isinstance(directory, str) and directory.startswith("s3://")):
        problems.append(
            f"source_code.source_dir: {directory!r} must be a source archive in S3: "
            "upload your code first (tar czf sourcedir.tar.gz -C src . && aws s3 cp sourcedir.tar.gz s3://...)"
        )
    if not entry:
        problems.append("source_code.entry_script: is required (the script in the archive to run)")
    for unsupported in ("command", "requirements", "args"):
        if getattr(source_code, unsupported, None):
            problems.append(
                f"source_code.{unsupported}: the framework container runs entry_script with the hyperparameters "
                "as arguments; put requirements.txt in the archive"
            )
    return {CODE_PROGRAM_HYPERPARAMETER: entry, CODE_DIRECTORY_HYPERPARAMETER: directory}
