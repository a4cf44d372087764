"""The file's server-wide tables as typed models: `[[webhooks]]`, `[telemetry]`, `[retention]`,
`[cluster]` and `[repositories.NAME]`. Each validator words its problem; `clarion.config.spec`
names the file and the key. Imports only the configuration models and the settings they build."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from clarion.config.spec import DurationValue, HttpUrl, NonEmptyString, Spec, event_names
from clarion.config.telemetry import Exporter, TelemetrySettings, traces_url
from clarion.config.webhooks import Webhook
from clarion.domain.notification_events import EVENTS


class WebhookSpec(Spec):
    """`[[webhooks]] url = "...", secret = "...", events = [...]` (events default: all)."""

    table_says = "must be a table"

    url: HttpUrl = Field(default=None, validate_default=True)
    secret: NonEmptyString = Field(default=None, validate_default=True)
    events: Annotated[frozenset[str], event_names(EVENTS, list_known=True)] = frozenset(EVENTS)

    def webhook(self) -> Webhook:
        return Webhook(url=self.url, secret=self.secret, events=self.events)


def webhook_list(value: Any) -> Any:
    """`[[webhooks]]`: an array of tables."""
    if not isinstance(value, list):
        raise ValueError("must be an array of tables ([[webhooks]])")
    return value


def distinct_urls(hooks: tuple[WebhookSpec, ...]) -> tuple[WebhookSpec, ...]:
    for number, hook in enumerate(hooks, start=1):
        if any(h.url == hook.url for h in hooks[: number - 1]):
            raise ValueError(f"[{number}].url: {hook.url} is configured twice")
    return hooks


Webhooks = Annotated[
    tuple[WebhookSpec, ...], BeforeValidator(webhook_list), AfterValidator(distinct_urls)
]


class TelemetrySpec(Spec):
    """`[telemetry] exporter = "otlp" | "console"`, `endpoint = "http://collector:4318"`
    (OTLP only), optional `service_name` (default `clarion`)."""

    unknown_says = "[]: unknown key(s) {keys}; known: {known}"

    exporter: Exporter = Field(default=None, validate_default=True)
    endpoint: HttpUrl | None = None
    service_name: str = "clarion"

    @field_validator("exporter", mode="before")
    @classmethod
    def _exporter(cls, value: Any) -> Any:
        if value not in ("otlp", "console"):
            raise ValueError(f'must be "otlp" or "console", got {value!r}')
        return value

    @field_validator("service_name", mode="before")
    @classmethod
    def _service_name(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be a non-empty string")
        return value.strip()

    @model_validator(mode="after")
    def _endpoint_for_otlp(self) -> Self:
        if self.exporter == "console" and self.endpoint is not None:
            raise ValueError('.endpoint is for exporter = "otlp" only')
        if self.exporter == "otlp" and self.endpoint is None:
            raise ValueError(
                '.endpoint is required with exporter = "otlp" '
                '(the collector\'s OTLP/HTTP address, e.g. "http://127.0.0.1:4318")'
            )
        return self

    def settings(self) -> TelemetrySettings:
        endpoint = None if self.endpoint is None else traces_url(self.endpoint)
        return TelemetrySettings(self.exporter, endpoint, self.service_name)


class RepositorySpec(Spec):
    """`[repositories.NAME] path = "/abs/repo"`, optional `base` (default: the branch checked
    out there, resolved when the server starts)."""

    unknown_says = ".{first}: unknown key"

    path: str = Field(default=None, validate_default=True)
    base: str | None = None

    @field_validator("path", mode="before")
    @classmethod
    def _path(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be an absolute path to a git repository")
        if not Path(value).is_absolute():
            raise ValueError(f"must be an absolute path, got {value!r}")
        return value

    @field_validator("base", mode="before")
    @classmethod
    def _base(cls, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be a branch name")
        return value


class RetentionSpec(Spec):
    """`[retention] older_than = "90d"`, optional `every = "1h"`."""

    unknown_says = "[]: unknown key(s) {keys}"

    older_than: DurationValue | None = None
    every: DurationValue | None = None


class ClusterSpec(Spec):
    """`[cluster] redirect_to_owner = true`: a 307 to a session's owner instead of the carry."""

    unknown_says = "[]: unknown key(s) {keys}"

    redirect_to_owner: bool = False

    @field_validator("redirect_to_owner", mode="before")
    @classmethod
    def _boolean(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {value!r}")
        return value
