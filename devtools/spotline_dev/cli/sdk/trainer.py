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
from types import TracebackType
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
ROLE_ARN_FORM = "arn:aws:iam::<account>:role/<name>"


class TrainerFileError(ValueError):
    """The file cannot be read or run, or does not define the ModelTrainer named."""


class _SettingsTheSdkWouldFetch(Exception):
    """Raised from inside the trainer's construction. Not a ValueError: pydantic would wrap one
    raised in `model_post_init` into its own ValidationError."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


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
        with _refusing_what_the_sdk_would_fetch(ModelTrainer):
            namespace = runpy.run_path(path, run_name="__spotline_trainer__")
    except _SettingsTheSdkWouldFetch as exc:
        raise TrainerNotConvertible(exc.problems) from exc
    except Exception as exc:
        if called := _aws_call(exc):
            raise TrainerNotConvertible([f"{path}: {called}"]) from exc
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
    if default_bucket := _default_bucket_paths(copy):
        raise TrainerNotConvertible(problems + default_bucket)  # building the request would look the bucket up
    if local_data:
        raise TrainerNotConvertible(problems + local_data)  # building the request would upload it
    try:
        request: dict[str, Any] = copy._create_training_job_args(input_data_config=inputs, boto3=True)
    except Exception as exc:  # the SDK's own refusal, or a call to AWS it tried and could not make
        problem = _aws_call(exc) or f"the SDK could not build the request offline: {type(exc).__name__}: {exc}"
        raise TrainerNotConvertible([problem]) from exc
    if code and not problems:
        request.setdefault("HyperParameters", {}).update(code)
    return request, problems


# ModelTrainer's constructors that fetch what they build from the network, and why a manifest
# cannot carry what they build.
FETCHING_CONSTRUCTORS = {
    "from_recipe": "a recipe trainer runs the SDK's recipe launcher (cloned from GitHub) and its own uploaded "
    "drivers; a manifest carries your image and code",
    "from_jumpstart_config": "a JumpStart trainer is built from the model's specification in S3 and its uploaded "
    "artifacts; a manifest carries your image and code",
}


@contextlib.contextmanager
def _refusing_what_the_sdk_would_fetch(model_trainer: Any) -> Iterator[None]:
    """While the file runs, a ModelTrainer that leaves out what the SDK would fetch from AWS at
    construction (the caller's role, the default bucket) is refused before the SDK fills it in,
    and so is a constructor that fetches the whole trainer."""
    original = model_trainer.model_post_init
    constructors = {name: model_trainer.__dict__[name] for name in FETCHING_CONSTRUCTORS}

    def checked(self: Any, context: Any, /) -> None:
        if problems := _settings_the_sdk_would_fetch(self):
            _set_private_defaults(self)  # ModelTrainer.__del__ reads them
            raise _SettingsTheSdkWouldFetch(problems)
        original(self, context)

    def refuse(name: str) -> classmethod[Any, ..., Any]:
        def constructor(cls: type, *args: Any, **kwargs: Any) -> Any:
            raise _SettingsTheSdkWouldFetch([f"ModelTrainer.{name}: {FETCHING_CONSTRUCTORS[name]}"])

        return classmethod(constructor)

    model_trainer.model_post_init = checked  # pydantic calls it by name
    for name in constructors:
        setattr(model_trainer, name, refuse(name))
    try:
        yield
    finally:
        model_trainer.model_post_init = original
        for name, constructor in constructors.items():
            setattr(model_trainer, name, constructor)


def _set_private_defaults(model: Any) -> None:
    """A pydantic model's private attributes at their defaults, as its own post-init sets them."""
    from pydantic_core import PydanticUndefined  # noqa: PLC0415 (with the SDK)

    defaults = {name: private.get_default() for name, private in type(model).__private_attributes__.items()}
    object.__setattr__(
        model,
        "__pydantic_private__",
        {name: value for name, value in defaults.items() if value is not PydanticUndefined},
    )


def _settings_the_sdk_would_fetch(trainer: Any) -> list[str]:
    """What the trainer, as written, leaves to the SDK to find in AWS (ModelTrainer.model_post_init:
    TrainDefaults.get_role and get_output_data_config), or names that a manifest cannot carry."""
    problems = []
    if trainer.training_image is None:
        built_in = f" ({trainer.algorithm_name} is a SageMaker built-in algorithm)" if trainer.algorithm_name else ""
        problems.append(f"training_image: is required: a manifest runs your own image{built_in}")
    if str(trainer.training_mode).endswith("LOCAL_CONTAINER"):
        return problems  # the SDK looks up no role and no bucket for it; `_unsupported` refuses it
    role = trainer.role
    if role is None:
        problems.append(
            f"role: is required: give the trainer its execution role's ARN ({ROLE_ARN_FORM}); "
            "without one the SDK asks AWS (STS, IAM) for a role of the caller"
        )
    elif isinstance(role, str) and not (role.startswith("arn:") and ":iam::" in role):
        problems.append(
            f"role: {role!r} is a role name, whose ARN the SDK would look up in IAM: give the ARN ({ROLE_ARN_FORM})"
        )
    return problems + _no_output_path(trainer)


_DEFAULT_BUCKET = (
    "{path}: is required: give the trainer {example} with an s3:// URI; without it the SDK looks up "
    "its default bucket in AWS (STS, S3)"
)


def _no_output_path(trainer: Any) -> list[str]:
    if trainer.output_data_config is None or not trainer.output_data_config.s3_output_path:
        return [_DEFAULT_BUCKET.format(path="output_data_config", example="OutputDataConfig(s3_output_path=...)")]
    return []


def _default_bucket_paths(trainer: Any) -> list[str]:
    """S3 locations the SDK fills in with its default bucket when it builds the request."""
    problems = _no_output_path(trainer)
    if trainer.checkpoint_config is not None and not trainer.checkpoint_config.s3_uri:
        problems.append(_DEFAULT_BUCKET.format(path="checkpoint_config.s3_uri", example="CheckpointConfig(s3_uri=...)"))
    tensorboard = getattr(trainer, "_tensorboard_output_config", None)
    if tensorboard is not None and not tensorboard.s3_output_path:
        problems.append(
            _DEFAULT_BUCKET.format(
                path="tensorboard_output_config.s3_output_path", example="TensorBoardOutputConfig(s3_output_path=...)"
            )
        )
    return problems


def _aws_call(exc: BaseException) -> str | None:
    """If `exc` comes from a call to AWS the SDK tried (offline_sdk's proxy refuses them all), which
    call, from where in the SDK: a refusal instead of a network error."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    chain: list[BaseException] = []
    error: BaseException | None = exc
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    aws = next((e for e in chain if isinstance(e, BotoCoreError | ClientError)), None)
    if aws is None:
        return None
    operation, callers = _operation_and_callers(exc.__traceback__, aws.__traceback__)
    where = f" in {callers[0]}" + (f" (through {callers[-1]})" if len(callers) > 1 else "") if callers else ""
    return (
        f"the SDK called AWS ({operation or type(aws).__name__}){where}: from-trainer builds the request "
        "offline, so write in the file what the SDK went to fetch (a role ARN, an s3:// URI)"
    )


def _operation_and_callers(*tracebacks: TracebackType | None) -> tuple[str | None, list[str]]:
    """The AWS operation botocore was asked for, and the SDK's functions that led to it, the
    outermost (what the file called) first."""
    operation, callers = None, []
    for traceback in tracebacks:
        entry = traceback
        while entry is not None and operation is None:
            frame = entry.tb_frame
            module = str(frame.f_globals.get("__name__", ""))
            if frame.f_code.co_name == "_make_api_call":
                operation = str(frame.f_locals.get("operation_name"))
            elif module.startswith("sagemaker.") and f"{module}.{frame.f_code.co_qualname}" not in callers:
                callers.append(f"{module}.{frame.f_code.co_qualname}")
            entry = entry.tb_next
    return operation, callers


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
