"""agentc sandboxes for the openai-agents SDK and for Strix.

`AgentcSandboxClient` implements the SDK's sandbox client interface on top of
`agentc serve --stdio` (docs/serve.md of the agentc repository): each session is one hardened
sandbox launched from an agentc profile. `agentc_sandbox.strix.register()` makes it Strix's
``STRIX_RUNTIME_BACKEND=agentc``.
"""

from .errors import (
    AgentcBinaryNotFound,
    AgentcCancelledError,
    AgentcEngineError,
    AgentcError,
    AgentcInvalidError,
    AgentcNotFoundError,
    AgentcNotRunningError,
    AgentcProtocolError,
    AgentcServerExited,
)
from .sandbox import (
    AgentcSandboxClient,
    AgentcSandboxClientOptions,
    AgentcSandboxSession,
    AgentcSandboxSessionState,
    HostMount,
    default_profile_text,
)
from .server import AgentcServer, find_agentc

__version__ = "0.1.0"

__all__ = [
    "AgentcBinaryNotFound",
    "AgentcCancelledError",
    "AgentcEngineError",
    "AgentcError",
    "AgentcInvalidError",
    "AgentcNotFoundError",
    "AgentcNotRunningError",
    "AgentcProtocolError",
    "AgentcSandboxClient",
    "AgentcSandboxClientOptions",
    "AgentcSandboxSession",
    "AgentcSandboxSessionState",
    "AgentcServer",
    "AgentcServerExited",
    "HostMount",
    "default_profile_text",
    "find_agentc",
]
