"""A SandboxAgent driven by a scripted model: its tool calls execute inside an agentc sandbox."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentc_sandbox import AgentcSandboxClientOptions

from .conftest import sandbox_names

pytestmark = pytest.mark.live

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "scripted_agent.py"


def _example():
    spec = importlib.util.spec_from_file_location("scripted_agent_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_scripted_sandbox_agent_runs_its_tools_in_agentc(live, profile_path):
    before = {n for n in sandbox_names(live["bin"]) if n.startswith("agentc-sdk-")}
    final, outputs = await _example().run(AgentcSandboxClientOptions(profile=str(profile_path)))
    assert final == "The plan is in notes/plan.md."
    assert len(outputs) == 3
    inspect, patch, check = outputs
    # exec_command ran in the sandbox: uid 1000 from the profile, no-new-privileges, the manifest.
    assert "1000" in inspect and "NoNewPrivs:\t1" in inspect and "task.txt" in inspect
    # apply_patch wrote through the session; the next command read it back inside the sandbox.
    assert "notes/plan.md" in patch
    assert "# Plan" in check and "2. write this file" in check
    # The run owned its session: the runner deleted the sandbox.
    assert {n for n in sandbox_names(live["bin"]) if n.startswith("agentc-sdk-")} <= before


async def test_example_with_the_default_profile(live):
    final, outputs = await _example().run(AgentcSandboxClientOptions(image=live["image"]))
    assert final == "The plan is in notes/plan.md."
    assert "# Plan" in outputs[2]
