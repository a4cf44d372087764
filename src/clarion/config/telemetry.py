"""`[telemetry]` from the config file: where traces go, if anywhere. Without the section the
server traces nothing and never loads OpenTelemetry. Imports only the configuration models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from clarion.config.spec import HttpUrl, Spec

Exporter = Literal["otlp", "console"]
# The OTLP/HTTP path of traces under a collector's base address.
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    """`exporter = "otlp"` sends spans over OTLP/HTTP (protobuf) to `endpoint`;
    `exporter = "console"` prints them on standard output, one JSON object each."""

    exporter: Exporter
    endpoint: str | None = None  # the full traces URL (`.../v1/traces`) for OTLP
    service_name: str = "clarion"


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


def traces_url(endpoint: str) -> str:
    """A collector's base address as its traces URL (`/v1/traces` added once)."""
    base = endpoint.rstrip("/")
    if urlsplit(base).path.endswith(TRACES_PATH):
        return base
    return base + TRACES_PATH
