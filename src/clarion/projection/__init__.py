"""Read-side services: pending_action projections with revisions, task summaries, event fan-out.

Imports domain and ports only (enforced by import-linter).
"""
