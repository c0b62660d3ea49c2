"""A SandboxAgent whose shell and file tools run inside an agentc sandbox.

The model is scripted (no provider, no network): it runs a command with the shell capability's
`exec_command`, writes a file with the filesystem capability's `apply_patch`, reads it back, and
answers. Every tool call executes in a hardened agentc sandbox launched from a profile.

    AGENTC_BIN=target/debug/agentc python examples/scripted_agent.py --image IMAGE [--profile P]

IMAGE is any local image with a POSIX shell (the repository's test image:
`bash scripts/build-test-image.sh`). Without --profile, a minimal custom profile runs IMAGE.
"""

from __future__ import annotations

import argparse
import asyncio

from agents import RunConfig, Runner
from agents.items import ToolCallOutputItem
from agents.sandbox import Manifest, SandboxAgent, SandboxRunConfig
from agents.sandbox.capabilities import Filesystem, Shell
from agents.sandbox.entries import File

from agentc_sandbox import AgentcSandboxClient, AgentcSandboxClientOptions
from agentc_sandbox.testing import apply_patch, exec_command, message, scripted_model

PATCH = """*** Begin Patch
*** Add File: notes/plan.md
+# Plan
+1. inspect the sandbox
+2. write this file
*** End Patch
"""


def build_agent() -> SandboxAgent:
    model = scripted_model(
        [
            [exec_command("id -u; cat /proc/self/status | grep NoNewPrivs; ls", call_id="call-1")],
            [apply_patch(PATCH, call_id="call-2")],
            [exec_command("cat notes/plan.md && wc -l < task.txt", call_id="call-3")],
            [message("The plan is in notes/plan.md.")],
        ]
    )
    return SandboxAgent(
        name="agentc-scripted",
        instructions="Work in the sandbox workspace.",
        model=model,
        default_manifest=Manifest(entries={"task.txt": File(content=b"write a plan\n")}),
        capabilities=[Shell(), Filesystem()],
    )


async def run(options: AgentcSandboxClientOptions) -> tuple[str, list[str]]:
    """Runs the scripted agent; returns its final output and each tool call's output."""
    async with AgentcSandboxClient() as client:
        result = await Runner.run(
            build_agent(),
            "Make a plan.",
            run_config=RunConfig(
                sandbox=SandboxRunConfig(client=client, options=options),
                tracing_disabled=True,
            ),
        )
    outputs = [
        str(item.output) for item in result.new_items if isinstance(item, ToolCallOutputItem)
    ]
    return str(result.final_output), outputs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--image", help="the image to run (replaces the profile's)")
    parser.add_argument("--profile", help="an agentc profile (default: a minimal custom one)")
    args = parser.parse_args()
    if not args.image and not args.profile:
        parser.error("give --image or --profile")
    final, outputs = asyncio.run(
        run(AgentcSandboxClientOptions(profile=args.profile, image=args.image))
    )
    for number, output in enumerate(outputs, 1):
        print(f"--- tool call {number}\n{output}")
    print(f"--- final output\n{final}")


if __name__ == "__main__":
    main()
