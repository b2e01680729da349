"""`spotline`: the command line: local checks (validate, render, simulate), the local system
(sandbox), and a deployed stack (submit, runs, status, logs, cancel, explain). Its commands are
the rows of one table (`cli.table`); this module builds the parser from it and runs one."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from spotline_dev.cli.table import add_commands
from spotline_dev.exit_codes import (
    EXIT_AWS,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_SUCCEEDED,
    EXIT_OK,
    EXIT_USAGE,
)

EXIT_CODES = f"""exit codes:
  {EXIT_OK}    done (validate: every manifest valid; sandbox, submit --wait: every run succeeded)
  {EXIT_INVALID}    invalid input: a manifest, team policy or file is refused, or the stack or run named does not exist
  {EXIT_USAGE}    usage error: an option is missing or wrong
  {EXIT_NOT_SUCCEEDED}    a run did not succeed (sandbox, submit --wait): failed, stopped or timed out
  {EXIT_AWS}    AWS refused or failed: credentials, access denied, throttling after retries
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_BROKEN_PIPE}  the reader of the output went away (`| head`): stopped quietly"""


def _version() -> str:
    try:
        return version("spotline")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spotline",
        description="Spotline: deadline-aware ML training on spot capacity. `spotline COMMAND --help` "
        "shows each command's options and examples.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"spotline {_version()}")
    add_commands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. When the reader of stdout goes away (`spotline ... | head`) the command
    stops quietly, as the Python documentation's "Note on SIGPIPE" does it: stdout is pointed at
    devnull, so that the interpreter's last flush at exit does not fail again."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at exit
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help and --version
        return int(exc.code or 0)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"spotline {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
