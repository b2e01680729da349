"""Work moto and botocore repeat that the local stack does once: parsing a state machine's
definition and its JSONPaths, loading botocore's API models per session (and moto's per read),
creating a client per Lambda task, sanitizing the same User-Agent parts, and deep-copying JSON
state with the general-purpose `copy.deepcopy`. Each shortcut returns what
moto's own code would (tests/devtools/harness/local/test_moto_shortcuts.py holds them to it)."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import os
import pickle
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import botocore.session
import botocore.signers
import botocore.useragent
import botocore.utils
import jsonpath_ng.ext
import moto
import moto.core.responses as moto_core_responses
import moto.core.utils as moto_core_utils
from botocore.loaders import Loader, create_loader
from dateutil.tz import tzoffset, tzutc
from moto.dynamodb.parsing import expressions as moto_dynamodb_expressions
from moto.stepfunctions.parser.asl.component.common.path import result_path as moto_result_path
from moto.stepfunctions.parser.asl.component.common.string import string_expression as moto_string_expression
from moto.stepfunctions.parser.asl.component.state.exec import execute_state as moto_execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils as moto_lambda_eval
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service as moto_state_task_service,
)
from moto.stepfunctions.parser.asl.eval import environment as moto_environment
from moto.stepfunctions.parser.asl.eval import states as moto_states
from moto.stepfunctions.parser.asl.eval.event import event_manager as moto_event_manager
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.utils import json_path as moto_json_path

_MOTO_ASL_PARSE = AmazonStateLanguageParser.parse
ASL_CACHE = Path(__file__).resolve().parents[4] / ".cache" / "moto-asl"
"""moto's parsed state machine programs, by definition (a local cache, like __pycache__)."""
_JSON_SCALARS = (str, int, float, bool, type(None))
_BOTOCORE_TIMESTAMP = getattr(botocore.utils, "_parse_timestamp_with_tzinfo")  # noqa: B009 (private)
_UTC = tzutc()


def parse_iso_timestamp(value: Any, tzinfo: Any) -> Any:
    """botocore's timestamp parse, with the ISO 8601 text AWS answers in read by
    `datetime.fromisoformat` rather than dateutil's general parser (a twentieth of a fleet replay).
    The answer is the same instant at the same UTC offset, in dateutil's tzinfo kinds (dateutil
    itself calls UTC tzlocal on a machine whose zone is UTC); anything else (epoch numbers,
    RFC 822 dates, unusual forms) goes to botocore's own parse."""
    if type(value) is str and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return _BOTOCORE_TIMESTAMP(value, tzinfo)
        offset = parsed.utcoffset()
        if offset is None:
            return parsed
        zone = _UTC if not offset else tzoffset(None, int(offset.total_seconds()))
        return parsed.replace(tzinfo=zone)
    return _BOTOCORE_TIMESTAMP(value, tzinfo)


def copy_json(value: Any, memo: Any = None) -> Any:
    """`copy.deepcopy` for JSON-shaped data (dicts, lists, strings, numbers, booleans, None), several
    times faster: no memo, no dispatch by type. Anything else inside is handed to `copy.deepcopy`.
    Unlike deepcopy, an object that appears twice becomes two copies, which JSON cannot tell apart."""
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if kind is list:
        return [copy_json(item) for item in value]
    if kind in _JSON_SCALARS:
        return value
    return copy.deepcopy(value)


_JSON_COPY = SimpleNamespace(deepcopy=copy_json, copy=copy.copy)
_COPYING_STATE = (
    moto_states,
    moto_string_expression,
    moto_result_path,
    moto_execute_state,
    moto_environment,
    moto_state_task_service,
    moto_event_manager,
)
"""moto's interpreter modules that deep-copy the execution's state (its input, results, the
stack of values) at every path it reads: a fifth of a replay's time with `copy.deepcopy`."""


@functools.lru_cache(maxsize=32)
def _pickled_program(definition: str) -> bytes:
    """moto's program for a definition (the evaluation components its Preprocessor builds from
    antlr's syntax tree), pickled. antlr's parse is the costly part of moto's
    AmazonStateLanguageParser.parse (a third of a second for Spotline's definition), which moto runs
    at CreateStateMachine and at every StartExecution: the program is kept per process and on disk
    (ASL_CACHE, keyed by the definition and the moto and Python versions), and each caller gets a
    fresh copy, as moto builds one per execution. A definition that does not parse raises each
    time; nothing is kept for it."""
    key = hashlib.sha256(f"{moto.__version__}\0{sys.version}\0{definition}".encode()).hexdigest()
    path = ASL_CACHE / f"{key}.pickle"
    with contextlib.suppress(OSError):
        return _checked(path.read_bytes())
    program = pickle.dumps(_MOTO_ASL_PARSE(definition)[0])
    with contextlib.suppress(OSError):
        ASL_CACHE.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(program)
        partial.replace(path)  # whole or absent, whichever process writes it
    return program


def _checked(program: bytes) -> bytes:
    """A cached program that does not load (a file cut short) is parsed again, as if absent."""
    try:
        pickle.loads(program)
    except Exception as error:
        raise OSError("unreadable cached program") from error
    return program


def _parse_asl(definition: str) -> tuple[Any, Any]:
    """moto's parse: a fresh program each time. No syntax tree: moto's executions and
    CreateStateMachine use only the program (its static analyser, which reads the tree, parses
    on its own)."""
    return pickle.loads(_pickled_program(definition)), None


@functools.lru_cache(maxsize=8)
def _shared_loader(data_path: str | None) -> Loader:
    return create_loader(data_path)


def share_botocore_data(exits: ExitStack) -> None:
    """Every botocore session (the stack's, the handlers' default one, moto's) reads its API
    models and endpoints through one loader per process, as one session's clients already do:
    each new session would otherwise parse the same JSON again (a second per replay)."""

    def register(session: botocore.session.Session) -> None:
        components = getattr(session, "_components")  # noqa: B009 (botocore keeps it private)
        components.lazy_register_component(
            "data_loader", lambda: _shared_loader(session.get_config_variable("data_path"))
        )

    exits.enter_context(mock.patch.object(botocore.session.Session, "_register_data_loader", register))
    # moto's own model reads (its response serializers, paginators) make a new loader each time,
    # which lists every botocore service folder again before reading the file.
    exits.enter_context(mock.patch.object(moto_core_utils, "create_loader", lambda: _shared_loader(None)))


def skip_repeated_botocore_work(exits: ExitStack) -> None:
    """What botocore does for every request that a request to moto in this process can skip."""
    # Requests to moto need no signature: it takes the account from MOTO_ACCOUNT_ID and the region
    # from the URL or AWS_DEFAULT_REGION (both set by the local stack). S3 is the exception: moto
    # applies bucket policies, and an unsigned request is anonymous there. Signing was a tenth of a
    # replay. (A presigned URL is still signed.)
    standard_sign = botocore.signers.RequestSigner.sign

    def sign(signer: Any, operation_name: str, request: Any, *args: Any, **kwargs: Any) -> None:
        standard = not args and kwargs.get("signing_type", "standard") == "standard"
        if not standard or signer.signing_name == "s3":
            standard_sign(signer, operation_name, request, *args, **kwargs)

    exits.enter_context(mock.patch.object(botocore.signers.RequestSigner, "sign", sign))
    # botocore rebuilds the same User-Agent header for every request, sanitizing each part anew.
    sanitize = botocore.useragent.sanitize_user_agent_string_component
    exits.enter_context(
        mock.patch.object(botocore.useragent, "sanitize_user_agent_string_component", functools.cache(sanitize))
    )
    exits.enter_context(mock.patch.object(botocore.utils, "_parse_timestamp_with_tzinfo", parse_iso_timestamp))


def skip_repeated_moto_work(exits: ExitStack) -> None:
    """moto's Step Functions interpreter parses every JSONPath again at each use (jsonpath_ng
    builds a ply parser each time), a large part of a replay's time. A parsed path is only read
    (find and update act on the data), so each path is parsed once per stack."""
    for module in (moto_json_path, moto_result_path, jsonpath_ng.ext):
        exits.enter_context(mock.patch.object(module, "parse", functools.lru_cache(maxsize=4096)(module.parse)))
    # (jsonpath_ng.ext's own parse too: moto's EventBridge imports it at each rule target's input
    # transformation, and each parse built a ply parser, a tenth of a fleet replay.)
    exits.enter_context(mock.patch.object(AmazonStateLanguageParser, "parse", staticmethod(_parse_asl)))
    # Its Lambda tasks likewise create a boto3 client for every invocation; one per region is enough.
    # (moto signs them with fixed keys, whatever the state's credentials).
    clients: dict[tuple[str, str], Any] = {}
    create = getattr(moto_lambda_eval, "boto_client_for")  # noqa: B009 (moto does not export it)

    def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        if (region, service) not in clients:
            clients[(region, service)] = create(region=region, service=service, state_credentials=state_credentials)
        return clients[(region, service)]

    exits.enter_context(mock.patch.object(moto_lambda_eval, "boto_client_for", client_for))
    for module in _COPYING_STATE:
        exits.enter_context(mock.patch.object(module, "copy", _JSON_COPY))
    # Its response classes list their own methods (inspect.getmembers) at every request.
    # (moto only asks whether an action is among them: a frozenset per class answers that.)
    method_names = functools.cache(lambda owner: frozenset(moto_core_utils.method_names_from_class(owner)))
    exits.enter_context(mock.patch.object(moto_core_responses, "method_names_from_class", method_names))
    # Its DynamoDB parses an UpdateExpression at each UpdateItem (twice); the tree is only read
    # (its validator works on a deep copy), so each expression is parsed once per stack.
    update_parser = getattr(moto_dynamodb_expressions, "UpdateExpressionParser")  # noqa: B009 (not in its stubs)
    parse_update = functools.lru_cache(maxsize=1024)(update_parser.make)
    exits.enter_context(mock.patch.object(update_parser, "make", staticmethod(parse_update)))
