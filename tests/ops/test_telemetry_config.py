"""`[telemetry]`: off without the section; an OTLP/HTTP collector or the console; a bad value
is one line naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from clarion.config import Settings
from clarion.config.telemetry import TelemetrySettings
from tests.refused_start import refused_serve_line


def _config(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "clarion.toml"
    path.write_text(toml)
    return str(path)


def _load(tmp_path: Path, toml: str) -> TelemetrySettings | None:
    settings = Settings.load(
        config_file=_config(tmp_path, toml), env={"CLARION_HOME": str(tmp_path)}
    )
    return settings.telemetry


def test_without_the_section_or_a_config_file_nothing_is_traced(tmp_path: Path) -> None:
    assert _load(tmp_path, 'public_url = "http://clarion.example"\n') is None
    assert Settings.load(env={"CLARION_HOME": str(tmp_path)}).telemetry is None


def test_an_otlp_collector_gets_spans_at_its_traces_path(tmp_path: Path) -> None:
    otlp = _load(tmp_path, '[telemetry]\nexporter = "otlp"\nendpoint = "http://otel:4318"\n')
    assert otlp == TelemetrySettings(
        exporter="otlp", endpoint="http://otel:4318/v1/traces", service_name="clarion"
    )
    # A base with a path or a trailing slash, and a full traces URL, all name one place.
    for endpoint, url in [
        ("https://collector.example/otlp/", "https://collector.example/otlp/v1/traces"),
        ("http://otel:4318/v1/traces", "http://otel:4318/v1/traces"),
    ]:
        loaded = _load(tmp_path, f'[telemetry]\nexporter = "otlp"\nendpoint = "{endpoint}"\n')
        assert loaded is not None and loaded.endpoint == url


def test_the_console_exporter_and_a_service_name_of_ones_own(tmp_path: Path) -> None:
    console = _load(tmp_path, '[telemetry]\nexporter = "console"\nservice_name = " clarion-eu "\n')
    assert console == TelemetrySettings(exporter="console", service_name="clarion-eu")


BAD = [
    ('[telemetry]\nexporter = "jaeger"\n', "telemetry.exporter"),
    ("[telemetry]\nendpoint = 'http://otel:4318'\n", "telemetry.exporter"),
    ('[telemetry]\nexporter = "otlp"\n', "telemetry.endpoint"),
    ('[telemetry]\nexporter = "otlp"\nendpoint = "otel:4318"\n', "telemetry.endpoint"),
    ('[telemetry]\nexporter = "otlp"\nendpoint = 4318\n', "telemetry.endpoint"),
    ('[telemetry]\nexporter = "console"\nendpoint = "http://otel:4318"\n', "telemetry.endpoint"),
    ('[telemetry]\nexporter = "console"\nservice_name = ""\n', "telemetry.service_name"),
    ('[telemetry]\nexporter = "console"\nservice_name = 7\n', "telemetry.service_name"),
    ('[telemetry]\nexporter = "console"\nsampler = "all"\n', "sampler"),
    ('telemetry = "on"\n', "[telemetry]"),
]


@pytest.mark.parametrize(("toml", "key"), BAD)
def test_a_bad_value_names_the_file_and_the_key(tmp_path: Path, toml: str, key: str) -> None:
    with pytest.raises(ValueError, match="telemetry") as raised:
        _load(tmp_path, toml)
    message = str(raised.value)
    assert str(tmp_path / "clarion.toml") in message and key in message
    assert "\n" not in message


def test_serve_stops_with_status_2_and_one_line_naming_file_and_key(tmp_path: Path) -> None:
    config = _config(tmp_path, '[telemetry]\nexporter = "zipkin"\n')
    line = refused_serve_line(tmp_path, config)
    assert config in line and "telemetry.exporter" in line
