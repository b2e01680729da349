"""The exit codes every `spotline` command keeps to (documented in `spotline --help` and
docs/platform/operating.md, "Exit codes")."""

EXIT_OK = 0
EXIT_INVALID = 1  # a manifest, team policy or file is refused, or the stack or run named does not exist
EXIT_USAGE = 2  # an option is missing or wrong (argparse's own code)
EXIT_NOT_SUCCEEDED = 3  # a run did not succeed (sandbox, submit --wait)
EXIT_AWS = 4  # AWS refused or failed: credentials, access denied, throttling after retries
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what shells report for a command a closed pipe ended
