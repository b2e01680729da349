"""The Lambda context the local stack hands a handler it runs in-process: what Powertools and the
custom resource protocol read of it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalLambdaContext:
    function_name: str
    invoked_function_arn: str = ""
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = "local"
    log_group_name: str = ""
    log_stream_name: str = "local"
    remaining_millis: int = 60_000  # the function's Timeout

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis
