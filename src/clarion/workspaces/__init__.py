"""Task workspaces: git worktrees per task and what changed in them.

The only code that runs the `git` program. Imported by the composition root, the CLI's doctor and
the edges that read changes; services reach it through `clarion.ports`.
"""
