"""Configuration: the frozen `Settings` a server and the CLI run with, read once from flags,
env vars and the TOML file (settings.py), and one reader per part of the file beside it.

Callers import the public names from here; the readers are imported by what they configure.
"""

from clarion.config.settings import (
    BUILTIN_PROFILE,
    AgentProfile,
    Settings,
    Timeouts,
    builtin_profile,
    default_database_url,
    load_agent_profiles,
)

__all__ = [
    "BUILTIN_PROFILE",
    "AgentProfile",
    "Settings",
    "Timeouts",
    "builtin_profile",
    "default_database_url",
    "load_agent_profiles",
]
