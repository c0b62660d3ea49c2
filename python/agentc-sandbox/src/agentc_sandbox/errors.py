"""The exceptions of `agentc_sandbox`.

`AgentcError` is what the server (`agentc serve --stdio`) answered: its JSON-RPC error code,
message and, for agentc's own failures (code -32000), the `exit_code`, `kind` and `hint` of its
`data`. Where the SDK expects its own error types (a missing file, an exec timeout, a port that
cannot be reached), the session raises those, with the `AgentcError` as their cause.
"""

from __future__ import annotations

from typing import Any

#: JSON-RPC error codes the server uses (docs/serve.md).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
REQUEST_CANCELLED = -32800
AGENTC_ERROR = -32000


class AgentcError(Exception):
    """A request the agentc server refused or failed.

    Attributes:
        code: the JSON-RPC error code (-32000 for agentc's own failures, -32800 for an exec
            stopped by `cancel`).
        message: the server's message (agentc's, its hint on the last line).
        exit_code: the class the command line would exit with (65 invalid input, 66 a file not
            found, 1 a refusal, 125 the engine failed, 130 cancelled); ``None`` for protocol
            errors.
        kind: ``invalid``, ``not_found``, ``not_running``, ``engine``, ``cancelled`` or
            ``failed``; ``None`` for protocol errors.
        hint: the fix, when agentc knows one.
        method: the request's method.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        exit_code: int | None = None,
        kind: str | None = None,
        hint: str | None = None,
        method: str | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.exit_code = exit_code
        self.kind = kind
        self.hint = hint
        self.method = method
        self.data = data

    @classmethod
    def from_rpc(cls, error: dict[str, Any], *, method: str | None = None) -> AgentcError:
        """The exception for a JSON-RPC error object, of the subclass its kind names."""
        code = error.get("code")
        message = str(error.get("message", "agentc serve: unknown error"))
        data = error.get("data")
        exit_code = kind = hint = None
        if isinstance(data, dict):
            exit_code = data.get("exit_code")
            kind = data.get("kind")
            hint = data.get("hint")
        subclass: type[AgentcError] = _BY_KIND.get(kind or "", cls) if cls is AgentcError else cls
        if code == METHOD_NOT_FOUND or code == INVALID_PARAMS:
            subclass = AgentcProtocolError
        return subclass(
            message,
            code=code if isinstance(code, int) else None,
            exit_code=exit_code if isinstance(exit_code, int) else None,
            kind=kind if isinstance(kind, str) else None,
            hint=hint if isinstance(hint, str) else None,
            method=method,
            data=data,
        )

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        return f"{where}{self.message}"


class AgentcInvalidError(AgentcError):
    """agentc found the profile or the input invalid (kind ``invalid``, exit 65)."""


class AgentcNotFoundError(AgentcError):
    """A file, path or sandbox does not exist (kind ``not_found``)."""


class AgentcNotRunningError(AgentcError):
    """The sandbox exists but is not running (kind ``not_running``)."""


class AgentcEngineError(AgentcError):
    """The container engine failed (kind ``engine``, exit 125)."""


class AgentcCancelledError(AgentcError):
    """The request was cancelled (`cancel`; code -32800, kind ``cancelled``): the exec's
    processes were stopped."""


class AgentcProtocolError(AgentcError):
    """The server did not understand the request (no such method, params that do not fit):
    this package and the server disagree on the protocol."""


class AgentcServerExited(AgentcError):
    """The server process ended (or could not start) before answering."""


class AgentcBinaryNotFound(AgentcError, FileNotFoundError):
    """No `agentc` executable in ``AGENTC_BIN`` or on ``PATH``."""


_BY_KIND: dict[str, type[AgentcError]] = {
    "invalid": AgentcInvalidError,
    "not_found": AgentcNotFoundError,
    "not_running": AgentcNotRunningError,
    "engine": AgentcEngineError,
    "cancelled": AgentcCancelledError,
}

__all__ = [
    "AGENTC_ERROR",
    "AgentcBinaryNotFound",
    "AgentcCancelledError",
    "AgentcEngineError",
    "AgentcError",
    "AgentcInvalidError",
    "AgentcNotFoundError",
    "AgentcNotRunningError",
    "AgentcProtocolError",
    "AgentcServerExited",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
]
