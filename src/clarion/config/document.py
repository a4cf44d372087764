"""The config file as one typed model: read and parsed once per load (`parse_file`, reached
through `clarion.config.load.read_document`), then every part of the settings is built from
it. A table's shape is checked by its model (`agent_spec`, `waiting`, `permissions`,
`channels`, `tables`); what spans tables (a role an agent names, the repository a workspace
names) is checked here. Keys the file may hold beside these are left alone.

A new key is a field here (or in its table's model) with a validator that words its problem;
the message names the file and the key path by itself (`clarion.config.spec`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BeforeValidator, ConfigDict, Field, model_validator

from clarion.config.agent_spec import AgentSpec
from clarion.config.channels import NotificationsSpec, SlackKeys, merged_notifications
from clarion.config.defaults import BUILTIN_PROFILE, MIN_SECRET
from clarion.config.files import read_config
from clarion.config.spec import (
    TABLE,
    AbsolutePath,
    DurationValue,
    HttpUrl,
    PositiveInteger,
    Spec,
)
from clarion.config.tables import (
    ClusterSpec,
    RepositorySpec,
    RetentionSpec,
    TelemetrySpec,
    Webhooks,
)
from clarion.config.waiting import Roles, WaitingSpec, role_names, unknown_role_message


def _tables(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(TABLE)
    return value


def _secret(strip: bool) -> Any:
    """A key or token: a string of at least MIN_SECRET characters (not counting the spaces
    around it, with `strip`)."""

    def check(value: Any) -> str:
        if not isinstance(value, str) or len(value.strip() if strip else value) < MIN_SECRET:
            raise ValueError(f"must be a string of at least {MIN_SECRET} characters")
        return value

    return BeforeValidator(check)


def _unknown_repository(workspace: str, named: object, repositories: object) -> str:
    known = ", ".join(sorted(repositories)) if isinstance(repositories, dict) else ""
    return (
        f"workspaces.{workspace}.repository: unknown repository {named!r};"
        f" [repositories] defines: {known or 'none'}"
    )


class WorkspaceSpec(Spec):
    """`[workspaces.NAME]`; other keys are left alone."""

    model_config = ConfigDict(extra="ignore")
    unknown_says = None

    waiting: WaitingSpec | None = None
    roles: Roles = Field(default_factory=dict)
    repository: str | None = None
    notifications: NotificationsSpec = NotificationsSpec()


class ConfigDocument(Spec):
    model_config = ConfigDict(extra="ignore")
    unknown_says = None

    # Fields are checked in this order and the first error is the one reported. The
    # top-level channels come before the workspaces, whose channels inherit their keys, so a
    # mistake is named where it is written.
    worktrees_dir: AbsolutePath | None = None
    notifications: NotificationsSpec = NotificationsSpec()
    workspaces: Annotated[dict[str, WorkspaceSpec], BeforeValidator(_tables)] = Field(
        default_factory=dict
    )
    agents: Annotated[dict[str, AgentSpec], BeforeValidator(_tables)] = Field(default_factory=dict)
    webhooks: Webhooks = ()
    public_url: HttpUrl | None = None
    answer_link_ttl: DurationValue | None = None
    answer_link_secret: Annotated[str, _secret(strip=False)] | None = None
    slack: SlackKeys = SlackKeys()
    metrics_token: Annotated[str, _secret(strip=True)] | None = None
    retention: RetentionSpec | None = None
    telemetry: TelemetrySpec | None = None
    cluster: ClusterSpec | None = None
    repositories: Annotated[dict[str, RepositorySpec], BeforeValidator(_tables)] = Field(
        default_factory=dict
    )
    max_patch_bytes: PositiveInteger | None = None

    @model_validator(mode="before")
    @classmethod
    def _merge_channels(cls, data: Any) -> Any:
        return merged_notifications(data)

    @model_validator(mode="before")
    @classmethod
    def _repository_names(cls, data: Any) -> Any:
        # A workspace's repository that is not even a name is refused as an unknown one.
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        for name, spec in (workspaces or {}).items() if isinstance(workspaces, dict) else ():
            named = spec.get("repository", "") if isinstance(spec, dict) else ""
            if not isinstance(named, str):
                repositories = data.get("repositories")
                raise ValueError(_unknown_repository(name, named, repositories))
        return data

    @model_validator(mode="after")
    def _across_tables(self) -> Self:
        for name, agent in self.agents.items():
            if agent.command is None and name != BUILTIN_PROFILE:
                raise ValueError(f"agents.{name}.command must be a non-empty list of strings")
        every_role = role_names(self.roles())
        for name, agent in self.agents.items():
            role = agent.waiting.unknown_role(every_role) if agent.waiting else None
            if role is not None:
                where = f"agents.{name}.waiting"
                raise ValueError(
                    unknown_role_message(where, role, every_role, "[workspaces.*.roles]")
                )
        for name, workspace in self.workspaces.items():
            waiting = workspace.waiting
            role = waiting.unknown_role(workspace.roles) if waiting else None
            if role is not None:
                where = f"workspaces.{name}"
                raise ValueError(
                    unknown_role_message(
                        f"{where}.waiting", role, workspace.roles, f"{where}.roles"
                    )
                )
            if workspace.repository is not None and workspace.repository not in self.repositories:
                raise ValueError(_unknown_repository(name, workspace.repository, self.repositories))
        return self

    def roles(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """`[workspaces.NAME.roles]` of every workspace that has some."""
        return {name: dict(ws.roles) for name, ws in self.workspaces.items() if ws.roles}


# Top-level keys an environment variable overrides: with the variable set, the file's value is
# never read, so neither is it checked.
ENV_WINS = {
    "public_url": "CLARION_PUBLIC_URL",
    "answer_link_ttl": "CLARION_ANSWER_LINK_TTL",
    "metrics_token": "CLARION_METRICS_TOKEN",
}


def parse_file(config_file: str | None, env: Mapping[str, str]) -> ConfigDocument:
    """The file at `config_file`, read and parsed once; ValueError naming the file, the key
    and the problem. Without a file, every key its default."""
    if not config_file:
        return ConfigDocument()
    path = Path(config_file)
    data = read_config(path)
    data = {k: v for k, v in data.items() if not (k in ENV_WINS and env.get(ENV_WINS[k]))}
    return ConfigDocument.parse(data, str(path))
