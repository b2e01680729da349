"""The `spotline` command: its entry point and command table, and what only the commands use."""
