"""Configuration: the frozen `Settings` a server and the CLI run with, read once from flags,
env vars and the TOML file (settings.py). The file is parsed once into typed models
(document.py, each table's model beside what it configures) and every part is built from them.

Callers import the public names from here; the parts are imported by what they configure.
"""

from clarion.config.agents import (
    BUILTIN_PROFILE,
    AgentProfile,
    builtin_profile,
    load_agent_profiles,
)
from clarion.config.settings import Settings, Timeouts, default_database_url

__all__ = [
    "BUILTIN_PROFILE",
    "AgentProfile",
    "Settings",
    "Timeouts",
    "builtin_profile",
    "default_database_url",
    "load_agent_profiles",
]
