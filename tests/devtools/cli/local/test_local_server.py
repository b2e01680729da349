"""`spotline local` as a user runs it: started in the background, a team file applied, a manifest
submitted and followed with runs/status/logs to its end, a second one cancelled, all through
HTTP from other processes (AWS_ENDPOINT_URL, made-up credentials), then stopped with nothing of
it left running. The clock moves only while a command waits (`--speed 0`), so the run is the same
every time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
STACK = ["--stack", "spotline-local"]
TEAM_FILE = "examples/teams/search-ranking.json"
WEEKLY, HOTFIX = "examples/manifests/ranker-v2.yaml", "examples/manifests/urgent-retrain.yaml"


class Shell:
    """Commands run as a user types them, in the repository, with the server's exports."""

    def __init__(self, state: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.env |= {"SPOTLINE_LOCAL_DIR": str(state), "HOME": str(state)}
        self.server: dict[str, str] = {}

    def spotline(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "spotline_dev.cli", *argv],
            check=False,
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check:
            assert done.returncode == 0, f"spotline {' '.join(argv)}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def export(self, printed: str) -> None:
        """What `spotline local` says to export, exported."""
        line = next(x for x in printed.splitlines() if x.strip().startswith("export "))
        for pair in line.split()[1:]:
            key, _, value = pair.partition("=")
            self.env[key] = value

    def wait(self, seconds: int) -> None:
        url = f"{self.env['AWS_ENDPOINT_URL']}/_spotline/wait?seconds={seconds}"
        with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=300):
            pass


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    user = Shell(tmp_path)
    yield user
    user.spotline("local", "stop", check=False)  # whatever the test did, no server outlives it


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)  # the server's session: the server and anything it started
    except ProcessLookupError:
        return True
    return False


def test_a_user_runs_their_team_and_manifests_through_spotline_local(shell: Shell, tmp_path: Path) -> None:
    started = shell.spotline("local", "--port", "0", "--speed", "0", "--start", "2026-12-01T00:00:00Z")
    assert "its clock started at 2026-12-01T00:00:00+00:00" in started
    shell.export(started)
    server = json.loads((tmp_path / "server.json").read_text())
    assert shell.env["AWS_ENDPOINT_URL"] == server["url"]

    assert "Applied: search-ranking version 1" in shell.spotline("teams", "apply", TEAM_FILE, *STACK)
    assert "search-ranking  1" in shell.spotline("teams", "list", *STACK)

    hotfix = shell.spotline("submit", HOTFIX, *STACK).splitlines()[1].split()[1]
    shell.wait(1800)
    runs = shell.spotline("runs", *STACK, "--state", "running")
    assert hotfix in runs and "training" in runs
    cancelled = shell.spotline("cancel", hotfix, *STACK, "--yes")
    assert f"Stopped execution {hotfix}" in cancelled

    weekly = shell.spotline("submit", WEEKLY, *STACK).splitlines()[1].split()[1]
    for _ in range(24):  # the weekly job trains 8 h: a look every hour until it ends
        shell.wait(3600)
        status = shell.spotline("status", weekly, *STACK)
        if "SUCCEEDED" in status.splitlines()[0]:
            break
    else:
        pytest.fail(f"{weekly} did not end within a virtual day:\n{status}")
    shown = {line.split()[0]: line.split() for line in shell.spotline("runs", *STACK).splitlines()[1:]}
    assert shown[weekly][3] == "succeeded" and shown[hotfix][3] == "stopped"
    logs = shell.spotline("logs", weekly, *STACK)
    assert "No checkpoint found: starting from step 0" in logs
    assert "Training completed: step 480/480" in logs

    stopped = shell.spotline("local", "stop")
    assert f"stopped (pid {server['pid']})" in stopped
    assert _gone(int(server["pid"]))
    assert not (tmp_path / "server.json").exists()
    assert "not running" in shell.spotline("local", "status", check=False)


def test_stop_ends_a_server_that_another_shell_started(shell: Shell, tmp_path: Path) -> None:
    """And what `spotline local` prints is the block docs/platform/operating.md shows (its port aside)."""
    printed = shell.spotline("local", "--port", "0", "--start", "2026-12-01T00:00:00Z")
    server = json.loads((tmp_path / "server.json").read_text())
    pid = int(server["pid"])
    page = (ROOT / "docs" / "platform" / "operating.md").read_text()
    shown = page.split("$ spotline local --start 2026-12-01T00:00:00Z\n", 1)[1].split("```", 1)[0]
    assert printed == shown.replace("http://127.0.0.1:4599", server["url"])
    again = shell.spotline("local", "--port", "0")
    assert f"already running (pid {pid})" in again
    os.kill(pid, 0)
    shell.spotline("local", "stop")
    assert _gone(pid)
    assert not (tmp_path / "server.json").exists()


def test_a_team_scores_a_night_through_spotline_local(shell: Shell) -> None:
    """A scoring manifest and its team file: the server plays the input, the buckets and the named
    model (under a role and image the team's entry allows), and the run scores to its end."""
    shell.export(shell.spotline("local", "--port", "0", "--speed", "0", "--start", "2026-12-04T20:00:00Z"))
    assert "valid offline" in shell.spotline("teams", "validate", "examples/teams/media-recs.json")
    shell.spotline("teams", "apply", "examples/teams/media-recs.json", *STACK)
    name = shell.spotline("submit", "examples/scoring/scores-on-upload.yaml", *STACK).splitlines()[1].split()[1]
    for _ in range(12):
        shell.wait(3600)
        status = shell.spotline("status", name, *STACK)
        if not status.splitlines()[0].split("  ", 1)[1].startswith("RUNNING"):
            break
    assert status.splitlines()[0] == f"{name}  SUCCEEDED: scored, window met", status
    assert "Records     40,000,000 in 13 shards" in status


def test_stop_never_signals_a_process_that_is_not_the_server(shell: Shell, tmp_path: Path) -> None:
    """A state file left behind (a crash, a reboot) may name a pid that is now someone else's:
    `stop` removes the file and leaves that process alone."""
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (tmp_path / "server.json").write_text(
            json.dumps({"pid": other.pid, "url": "http://127.0.0.1:9", "log": str(tmp_path / "server.log")})
        )
        assert "not running" in shell.spotline("local", "stop")
        assert other.poll() is None, "stop signalled a process that is not a spotline local server"
        assert not (tmp_path / "server.json").exists()
    finally:
        other.kill()
        other.wait()
