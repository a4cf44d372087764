"""The agent layer: `runtime.AcpRuntime` (the `ports.AgentRuntime` that spawns ACP agents) and the
built-in scripted agent (`python -m clarion.agents.builtin`). Only the composition root imports
the runtime; services reach agents through the port. Nothing is re-exported here so that the
built-in agent's process does not import the runtime's modules."""
