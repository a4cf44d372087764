"""`clarion demo`: the whole clarification story against a throwaway server.

`story.run_demo` plays it; `servers.DemoServer` starts, kills and restarts the `clarion serve`
subprocess it talks to. Imported by the CLI only.
"""
