"""`spotline local`: start the local stack as a server in the background (`start`, the default),
say where it is (`status`), end it (`stop`), or run it in this terminal (`--foreground`).

The server's pid, address and log live in one folder ($SPOTLINE_LOCAL_DIR, default
~/.cache/spotline-local), so `spotline local stop` finds the server from any directory. The server
runs in a session of its own: `stop` ends it and everything it started, and waits until it is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spotline_dev.cli.operate.parser import examples, timestamp
from spotline_dev.cli.table import load
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK

STATE_DIR_ENV = "SPOTLINE_LOCAL_DIR"
DEFAULT_PORT = 4599
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 60.0
_SERVER = "spotline_dev.harness.serve.server"
CREDENTIALS = "spotline-local"
"""Any access key works (nothing checks signatures locally): this one says where it is used."""


def options(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Starts the Spotline stack on this machine as an AWS endpoint (no AWS account): the aws CLI, boto3 "
        "and the spotline commands reach it through AWS_ENDPOINT_URL with any credentials. Its clock runs "
        "SPEED times as fast as wall time (0: only while a command waits). The account plays what each "
        "uploaded manifest names (role, image, buckets), as the sandbox does."
    )
    parser.epilog = examples(
        "spotline local --start 2026-12-01T00:00:00Z   # in the background (the examples' dates); prints the exports",
        "spotline local --speed 600 --scenario examples/scenarios/default.yaml",
        "spotline local --speed 0 --start 2026-12-01T00:00:00Z  # time moves only while a command waits",
        "spotline local status",
        "spotline local stop",
    )
    parser.add_argument(
        "action",
        nargs="?",
        choices=("start", "stop", "status"),
        default="start",
        help="start the server in the background (default), say where it is, or end it",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0: any)")
    parser.add_argument(
        "--speed",
        type=_speed,
        default=60.0,
        help="virtual seconds per real second (default 60: an hour of training takes a minute; 0: the clock "
        "moves only while a command waits)",
    )
    parser.add_argument(
        "--scenario", type=Path, help="a sandbox scenario: its spot weather and queue capacity (default: calm spot)"
    )
    parser.add_argument(
        "--start", type=timestamp, help="what the clock reads when the server starts (RFC 3339; default: now)"
    )
    parser.add_argument("--team-policy", type=Path, metavar="FILE", help="seed the team registry with this file")
    parser.add_argument(
        "--wait-step",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --speed 0: the least each wait of a command moves the clock (default: what it asks)",
    )
    parser.add_argument("--vpc", action="store_true", help="give jobs a VPC (jobs of many instances, file systems)")
    parser.add_argument("--foreground", action="store_true", help="run the server in this terminal until Ctrl-C")


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= speed <= 86400:
        raise argparse.ArgumentTypeError(f"{text}: from 0 (only while a command waits) to 86400 (a day a second)")
    return speed


@dataclass(frozen=True)
class Running:
    pid: int
    url: str
    log: str

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "url": self.url, "log": self.log}


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or Path.home() / ".cache" / "spotline-local")


def _state_file() -> Path:
    return state_dir() / "server.json"


def running() -> Running | None:
    """The server the state folder names, if its process is still there and is that server (a pid
    left in the file by a reboot may now be someone else's)."""
    try:
        data = json.loads(_state_file().read_text())
        found = Running(int(data["pid"]), str(data["url"]), str(data["log"]))
        os.kill(found.pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if _is_server(found) else None


def _is_server(found: Running) -> bool:
    """Its process runs `spotline local --foreground` (Linux: /proc), or its address answers as one."""
    try:
        command = Path(f"/proc/{found.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return clock_of(found.url) is not None
    spotline = any(part == b"spotline_dev.cli" or part.endswith(b"/spotline") for part in command)
    return spotline and b"local" in command and b"--foreground" in command


def clock_of(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """The server's clock (GET /_spotline/clock), or None when nothing answers there."""
    try:
        with urllib.request.urlopen(f"{url}/_spotline/clock", timeout=timeout) as answer:
            data = json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) and data.get("server") == "spotline-local" else None


def cmd_local(args: argparse.Namespace) -> int:
    if args.action == "stop":
        return _stop()
    if args.action == "status":
        found = running()
        clock = clock_of(found.url) if found else None
        if found is None or clock is None:
            print("spotline local: not running")
            return EXIT_INVALID
        _describe(found.url, clock)
        return EXIT_OK
    if args.foreground:
        return _serve(args)
    return _start(args)


def _start(args: argparse.Namespace) -> int:
    found = running()
    if found is not None:
        clock = clock_of(found.url, timeout=10.0)
        if clock is None:  # still starting, or stuck: never a second server beside it
            print(
                f"spotline local: a server (pid {found.pid}) is there but does not answer at {found.url}; "
                f"see {found.log}, or end it with spotline local stop",
                file=sys.stderr,
            )
            return EXIT_INVALID
        print(f"spotline local: already running (pid {found.pid})")
        _describe(found.url, clock)
        return EXIT_OK
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    _state_file().unlink(missing_ok=True)
    log = folder / "server.log"
    command = [sys.executable, "-m", "spotline_dev.cli", "local", "--foreground", "--port", str(args.port)]
    command += ["--speed", str(args.speed), "--wait-step", str(args.wait_step)] + (["--vpc"] if args.vpc else [])
    command += [f"--start={args.start.isoformat()}"] if args.start else []
    command += [f"--scenario={args.scenario.resolve()}"] if args.scenario else []
    command += [f"--team-policy={args.team_policy.resolve()}"] if args.team_policy else []
    # The server answers AWS calls itself: an endpoint exported in this shell must not reach it.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")}
    with log.open("wb") as output:
        child = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=environment, start_new_session=True
        )
    waited = 0.0
    while waited < START_TIMEOUT_SECONDS:
        found = running()
        if found is not None and found.pid == child.pid and (clock := clock_of(found.url)) is not None:
            _describe(found.url, clock, starting=True)
            return EXIT_OK
        if child.poll() is not None:
            break
        time.sleep(0.2)
        waited += 0.2
    _end(child.pid)
    tail = log.read_text(errors="replace").splitlines()[-15:]
    print("spotline local: the server did not start:\n" + "\n".join(tail), file=sys.stderr)
    return EXIT_INVALID


def _serve(args: argparse.Namespace) -> int:
    # moto and the stack are imported only here, when the server runs (`spotline --help` stays fast).
    local_options, serving = load(f"{_SERVER}:LocalOptions"), load(f"{_SERVER}:serving")
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    local = local_options(
        port=args.port,
        speed=args.speed,
        scenario=args.scenario,
        team_policy=args.team_policy,
        vpc=args.vpc,
        wait_step=args.wait_step,
    )
    with serving(local, args.start) as server:
        host, port = str(server.server_address[0]), int(server.server_address[1])
        url = f"http://{host}:{port}"
        folder = state_dir()
        folder.mkdir(parents=True, exist_ok=True)
        written = Running(os.getpid(), url, str(folder / "server.log"))
        _state_file().write_text(json.dumps(written.to_dict()))
        print(f"spotline local: serving at {url}", flush=True)
        try:
            stopped.wait()
        finally:
            if running() == written:
                _state_file().unlink(missing_ok=True)
    print("spotline local: stopped", flush=True)
    return EXIT_OK


def _stop() -> int:
    found = running()  # None also when the pid in the file is no longer a spotline local server
    if found is None:
        _state_file().unlink(missing_ok=True)
        print("spotline local: not running")
        return EXIT_OK
    _end(found.pid)
    _state_file().unlink(missing_ok=True)
    print(f"spotline local: stopped (pid {found.pid})")
    return EXIT_OK


def _end(pid: int) -> None:
    """SIGTERM to the server's session, then SIGKILL if it is still there after the timeout."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)  # our child: reap it
        except ChildProcessError:
            finished = 0
            try:
                os.kill(pid, 0)
            except OSError:
                return
        if finished == pid:
            return
        time.sleep(0.2)
    os.killpg(pid, signal.SIGKILL)


def _describe(url: str, clock: dict[str, Any], *, starting: bool = False) -> None:
    speed = float(clock["speed"])
    pace = f"runs {speed:g} times as fast as wall time" if speed else "moves only while a command waits"
    region = clock["region"]
    reads = f"started at {clock['start']}" if starting else f"reads {clock['now']}"
    print(
        f"spotline local: stack {clock['stack']} at {url} (account {clock['account']}, {region}); "
        f"its clock {reads} and {pace}\n"
        "Point the aws CLI and spotline at it:\n"
        f"  export AWS_ENDPOINT_URL={url} AWS_REGION={region} AWS_DEFAULT_REGION={region} "
        f"AWS_ACCESS_KEY_ID={CREDENTIALS} AWS_SECRET_ACCESS_KEY={CREDENTIALS}\n"
        f"  spotline teams apply examples/teams/search-ranking.json --stack {clock['stack']}\n"
        f"  spotline submit examples/manifests/ranker-v2.yaml --stack {clock['stack']}\n"
        "End it with: spotline local stop"
    )
