"""`spotline local`: the local stack as a server. The aws CLI, boto3 and the `spotline` operator
commands reach it through the standard `AWS_ENDPOINT_URL`, with any credentials. Its clock runs at
a chosen speed over wall time.

What the sandbox does around a run, the server does around each request and tick:

- The account plays what each uploaded manifest names. A training manifest put into the ingest
  bucket gets its role, image and buckets, as in the sandbox (`prepare_account`), before
  EventBridge delivers the upload. Its jobs train for the manifest's expectedDuration.
- EventBridge delivers rule matches to their Lambda targets at every tick (`deliver_events`). The
  stack's Batch and SageMaker changes are delivered as the clock reaches them.
- The clock has one more participant, the time keeper. At `speed` > 0 it sleeps `speed` virtual
  seconds per real second, so the clock moves at that pace. At 0 it sleeps only when a client asks
  to wait (`POST /_spotline/wait`), so time stands still between commands, as in a test.

Two paths are the server's own, under `/_spotline/`: `GET clock` (the virtual time, the speed, the
stack) and `POST wait?seconds=N`. `spotline` commands use them for their `now` and their waits
when AWS_ENDPOINT_URL points here (`spotline_dev.cli.operate.deployment`).
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from spotline.aws.teams import team_registry
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.scoring.scoring import ScoringSpec
from spotline_dev.harness.local.gateway import Answer, Gateway, GatewayError, service_of_signing_name
from spotline_dev.harness.local.handles import ACCOUNT, REGION, STACK, LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.sandbox.runs import QUIET, powertools_environment_for, weather_of
from spotline_dev.harness.sandbox.scenario import TransformSpec, load_scenario
from spotline_dev.harness.sandbox.scoring import DEFAULT_RECORDS_PER_SECOND, prepare_scoring, scoring_allowance
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformWeather

SERVER_NAME = "spotline-local"
TICK_SECONDS = 0.5
"""Real time between two moves of the clock (and two deliveries of EventBridge's matches)."""
DEFAULT_DURATION_SECONDS = 3600.0
"""How long a job trains when its manifest declares no expectedDuration."""
MANIFESTS_PREFIX = "manifests/"
ROLE_PATH = "spotline"
"""The IAM path of the roles the server makes for a scoring model (the template's TrainingRolePath)."""
TRANSFORM_OBJECTS = 400
"""The objects a scoring manifest's input is spread over (the sandbox's default)."""
log = logging.getLogger("spotline.local")


@dataclass(frozen=True)
class LocalOptions:
    host: str = "127.0.0.1"
    port: int = 4599
    speed: float = 60.0
    """Virtual seconds per real second; 0: the clock moves only while a client waits."""
    scenario: Path | None = None
    """A sandbox scenario whose spot weather and queue capacity the stack plays."""
    team_policy: Path | None = None
    """A team policy file to seed the registry with, as `spotline teams apply` would."""
    vpc: bool = False
    """A VPC for the jobs (two zones): for jobs of many instances or on a file system."""
    wait_step: float = 0.0
    """At speed 0, the least a client's wait moves the clock: a command that looks every 15 s
    (`submit --wait`) then looks every `wait_step` of virtual time."""


@dataclass
class TimeKeeper:
    """The clock's pace: the one participant of the virtual clock that is not an execution."""

    stack: LocalStack
    speed: float
    wait_step: float = 0.0
    key: str = SERVER_NAME
    errors: list[str] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held while EventBridge delivers, and around an upload and the account it plays."""
    _stopped: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self.stack.clock.join(self.key)
        if self.speed > 0:
            self._thread = threading.Thread(target=self._pace, name="spotline-local-clock", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self.stack.clock.leave(self.key)
        if self._thread is not None:
            self._thread.join(timeout=30)

    def deliver(self) -> None:
        with self.lock:
            self.stack.deliver_events(on_error=lambda rule, error: self._failed(f"{rule}: {error}"))

    def _failed(self, what: str) -> None:
        self.errors.append(what)
        log.error("EventBridge delivery failed: %s", what)

    def _pace(self) -> None:
        while not self._stopped.wait(TICK_SECONDS):
            try:
                self.deliver()
            except Exception as error:  # a delivery that fails must not stop the clock
                self._failed(f"{type(error).__name__}: {error}")
            self.stack.clock.sleep(self.speed * TICK_SECONDS, key=self.key)

    def wait(self, seconds: float) -> None:
        """A client waits `seconds` of virtual time: the clock moves them (speed 0) or passes them."""
        if self.speed > 0:
            target = self.stack.clock.now().timestamp() + seconds
            while self.stack.clock.now().timestamp() < target and not self._stopped.wait(TICK_SECONDS / 5):
                pass
            return
        with self.lock:  # one waiter moves the clock at a time
            self.deliver()
            self.stack.clock.sleep(max(seconds, self.wait_step), key=self.key)
            self.deliver()


class LocalServer(ThreadingHTTPServer):
    """Bound first (a port in use is said at once), then given the stack it serves."""

    daemon_threads = True
    local: LocalStackService

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)


@dataclass
class LocalStackService:
    """What the HTTP handler serves: AWS requests through the gateway, and the clock."""

    stack: LocalStack
    keeper: TimeKeeper
    gateway: Gateway
    durations: dict[tuple[str, str], float] = field(default_factory=dict)  # (team, job) -> training seconds
    transform: TransformSpec | None = None  # the scenario's `transform:`, if it has one
    start: datetime = field(default_factory=lambda: datetime.now(UTC))  # what the clock read at the start

    def answer(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Answer:
        upload = self._ingest_key(method, target)
        if upload is None:
            return self.gateway.answer(method, target, headers, body)
        with self.keeper.lock:  # no delivery between the upload and the account it plays
            answered = self.gateway.answer(method, target, headers, body)
            if answered.status == 200:
                try:
                    self._play(upload)
                except Exception:  # the upload is stored: its run goes on, and LoadManifest judges it
                    log.error("playing the account of %s failed:\n%s", upload, traceback.format_exc())
            return answered

    def _ingest_key(self, method: str, target: str) -> str | None:
        """The manifest a request uploads into the ingest bucket (path style), if it is one."""
        split = urlsplit(target)
        bucket, _, key = unquote(split.path).lstrip("/").partition("/")
        if method == "PUT" and not split.query and bucket == self.stack.bucket and key.startswith(MANIFESTS_PREFIX):
            return key  # a PutObject (a part, tags or an ACL carry a query)
        return None

    def _play(self, key: str) -> None:
        """The account has what the manifest names, as the sandbox plays it; an invalid manifest
        changes nothing (LoadManifest refuses it, naming the field)."""
        body = self.stack.client("s3").get_object(Bucket=self.stack.bucket, Key=key)["Body"].read()
        validated = validate_bytes(body, now=self.stack.clock.now())
        if validated.scoring is not None:
            self._play_scoring(validated.scoring)
        spec = validated.spec
        if spec is None:
            return
        prepare_account(self.stack.client, spec)
        self.durations[(spec.team, spec.name)] = float(spec.expected_duration_seconds or DEFAULT_DURATION_SECONDS)

    def _play_scoring(self, spec: ScoringSpec) -> None:
        """The night's input, its buckets and its model, as the sandbox plays them. A model named by
        `model.name` is registered under a role and image the team's entry allows (a pattern's `*`
        made the team's name); the stand-in scores at the manifest's declared throughput unless a
        scenario's `transform:` says otherwise."""
        entry = scoring_allowance(spec, self.stack.account, self.stack.region, ROLE_PATH)
        registry = self.stack.outputs["TeamRegistryBucketName"][0]
        record = team_registry.record_of(spec.team, fresh=True, bucket_name=registry)
        if record is not None and record.entry:
            for name, stands_for in (("roles", f"{spec.team}-model"), ("images", f"{spec.team}-model:local")):
                allowed = [str(value).replace("*", stands_for) for value in record.entry.get(name) or []]
                entry[name] = allowed or entry[name]
        if self.transform is None:
            records_per_second = spec.records_per_second or DEFAULT_RECORDS_PER_SECOND
            self.stack.standin.transforms.weather = TransformWeather(records_per_second)
        prepare_scoring(self.stack, spec, TRANSFORM_OBJECTS, entry, missing=[])

    def behaviour(self, request: dict[str, Any]) -> TrainingBehaviour:
        """Each job trains for its manifest's expectedDuration (found by the job's tags)."""
        tags = {tag["Key"]: tag["Value"] for tag in request.get("Tags") or []}
        key = (tags.get("spotline:team", ""), tags.get("spotline:job", ""))
        return TrainingBehaviour(duration=self.durations.get(key, DEFAULT_DURATION_SECONDS))

    def clock(self) -> dict[str, Any]:
        return {
            "server": SERVER_NAME,
            "now": self.stack.clock.now().isoformat(),
            "start": self.start.isoformat(),
            "speed": self.keeper.speed,
            "stack": STACK,
            "account": self.stack.account,
            "region": self.stack.region,
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        body = self._body()
        if self.path.startswith("/_spotline/"):
            self._control()
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            answer = self.server.local.answer(self.command, self.path, headers, body)
        except GatewayError as error:
            answer = _json(400, {"__type": "SpotlineLocalError", "message": str(error)})
        except Exception:  # one request's failure must not stop the server
            log.error("%s %s failed:\n%s", self.command, self.path, traceback.format_exc())
            answer = _json(500, {"__type": "InternalFailure", "message": "spotline local failed (see its log)"})
        self._send(answer)

    def _control(self) -> None:
        local, split = self.server.local, urlsplit(self.path)
        if split.path == "/_spotline/clock" and self.command == "GET":
            self._send(_json(200, local.clock()))
        elif split.path == "/_spotline/wait" and self.command == "POST":
            try:
                seconds = float((parse_qs(split.query).get("seconds") or ["0"])[0])
            except ValueError:
                self._send(_json(400, {"message": "seconds: not a number of seconds"}))
                return
            local.keeper.wait(max(0.0, min(seconds, 86400.0)))
            self._send(_json(200, local.clock()))
        else:
            self._send(_json(404, {"message": f"no such path: {self.command} {split.path}"}))

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        length = str(len(answer.body))
        for key, value in answer.headers.items():
            if key.lower() == "content-length":
                length = value if self.command == "HEAD" else length  # HEAD: the object's size
                continue
            self.send_header(key, value)
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)


def _json(status: int, payload: dict[str, Any]) -> Answer:
    return Answer(status, {"Content-Type": "application/json"}, json.dumps(payload).encode())


@contextmanager
def serving(options: LocalOptions, start: datetime | None = None) -> Iterator[LocalServer]:
    """The local stack, served at options.host:options.port (port 0: any free port) until exit."""
    moment = (start or datetime.now(UTC)).replace(second=0, microsecond=0)
    # A scenario's times are offsets from its start: here, from the server's.
    scenario = replace(load_scenario(options.scenario), start=moment) if options.scenario else None
    weather = weather_of(scenario) if scenario else SpotWeather()
    policy = options.team_policy.read_text() if options.team_policy else None
    holder: dict[str, LocalStackService] = {}

    def behaviour(request: dict[str, Any]) -> TrainingBehaviour:
        return holder["service"].behaviour(request)

    server = LocalServer((options.host, options.port))  # OSError at once when the port is taken
    service_of_signing_name()  # the services' models, loaded before the first request waits on them
    try:
        with (
            powertools_environment_for(False),
            start_local_stack(
                moment,
                environment=dict(QUIET),
                weather=weather,
                behaviour=behaviour,
                capacity=scenario.capacity if scenario else None,
                account=ACCOUNT,
                region=REGION,
                team_policy=policy,
                network=options.vpc,
            ) as stack,
        ):
            keeper = TimeKeeper(stack, options.speed, options.wait_step)
            transform = scenario.transform if scenario else None
            gateway = Gateway(stack.session, stack.region)
            service = holder["service"] = LocalStackService(stack, keeper, gateway, transform=transform, start=moment)
            if transform is not None:
                stack.standin.transforms.weather = TransformWeather(
                    transform.records_per_second,
                    [(moment.timestamp() + at, factor) for at, factor in transform.changes],
                    transform.start_delay,
                )
            server.local = service
            thread = threading.Thread(target=server.serve_forever, name="spotline-local-http", daemon=True)
            keeper.start()
            thread.start()
            try:
                yield server
            finally:
                server.shutdown()
                keeper.stop()
                thread.join(timeout=10)
    finally:
        server.server_close()
