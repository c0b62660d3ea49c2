"""A scripted model for driving a `SandboxAgent` without a model provider, on any supported SDK.

openai-agents 0.20 and later ship `agents.testing.ScriptedModel`; 0.19 does not. `scripted_model`
returns the SDK's where it exists, else a minimal equivalent: each call returns the next list of
output items. `exec_command`, `apply_patch` and `message` build the output items a model would
send for the sandbox's shell tool, its filesystem (patch) tool and a final answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from agents.items import ModelResponse, TResponseOutputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


def message(text: str, *, item_id: str = "msg-final") -> TResponseOutputItem:
    """A final assistant message."""
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[], logprobs=[])],
    )


def exec_command(cmd: str, *, call_id: str, **arguments: Any) -> TResponseOutputItem:
    """A call of the sandbox shell capability's `exec_command` tool."""
    return ResponseFunctionToolCall(
        id=f"fc-{call_id}",
        call_id=call_id,
        type="function_call",
        name="exec_command",
        arguments=json.dumps({"cmd": cmd, **arguments}),
    )


def apply_patch(patch: str, *, call_id: str) -> TResponseOutputItem:
    """A call of the sandbox filesystem capability's `apply_patch` tool (a V4A patch)."""
    return ResponseCustomToolCall(
        id=f"ctc-{call_id}",
        call_id=call_id,
        type="custom_tool_call",
        name="apply_patch",
        input=patch,
    )


class MiniScriptedModel(Model):
    """Each `get_response` returns the next scripted list of output items."""

    def __init__(self, steps: Iterable[Sequence[TResponseOutputItem]]) -> None:
        self._steps = [list(step) for step in steps]
        self.calls: list[dict[str, Any]] = []

    @property
    def remaining_steps(self) -> int:
        return len(self._steps)

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.calls.append({"input": input, "tools": [getattr(t, "name", t) for t in tools]})
        if not self._steps:
            raise RuntimeError("MiniScriptedModel: no scripted step left")
        output = self._steps.pop(0)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("MiniScriptedModel does not stream")


def scripted_model(steps: Iterable[Sequence[TResponseOutputItem]]) -> Model:
    """`agents.testing.ScriptedModel` (openai-agents >= 0.20) or `MiniScriptedModel`."""
    steps = [list(step) for step in steps]
    try:
        from agents.testing import ScriptedModel
    except ImportError:
        return MiniScriptedModel(steps)
    return ScriptedModel(steps)


__all__ = ["MiniScriptedModel", "apply_patch", "exec_command", "message", "scripted_model"]
