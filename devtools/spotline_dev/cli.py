"""`spotline`: the developer-side command line (validate, render, sandbox, ...)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from spotline.errors import DOCUMENT, ManifestError
from spotline.manifest import validate_bytes

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def _read(path: str) -> bytes | ManifestError:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        return ManifestError(DOCUMENT, f"cannot read file: {exc.strerror or exc}")


def cmd_validate(args: argparse.Namespace) -> int:
    now = args.now or datetime.now(UTC)
    reports = []
    for path in args.files:
        data = _read(path)
        errors = (
            [data] if isinstance(data, ManifestError) else validate_bytes(data, now=now, expected_team=args.team).errors
        )
        reports.append({"file": path, "valid": not errors, "errors": [e.to_dict() for e in errors]})
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        for report in reports:
            if report["valid"]:
                print(f"{report['file']}: valid")
            for error in report["errors"]:
                print(f"{report['file']}: {error['path']}: {error['message']}")
    return EXIT_OK if all(r["valid"] for r in reports) else EXIT_INVALID


def _timestamp(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.upper())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 timestamp") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} needs an offset such as Z")
    return moment


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spotline", description="Spotline developer tools.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser("validate", help="check manifests against the spotline/v1 contract")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--json", action="store_true", help="machine-readable report")
    validate.add_argument("--team", help="also require metadata.team to be this team (as the S3 folder does)")
    validate.add_argument("--now", type=_timestamp, help="judge deadlines as of this RFC 3339 time (default: now)")
    validate.set_defaults(run=cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
