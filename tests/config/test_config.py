"""Settings.load: flags over env over defaults, timeouts, and agent profiles from TOML."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from clarion.config import BUILTIN_PROFILE, Settings, Timeouts, load_agent_profiles
from clarion.config.files import redacted

TIMEOUT_VARS = {
    "CLARION_CLARIFICATION_WAIT_S": ("clarification_wait", 7200.0),
    "CLARION_KEEPALIVE_S": ("keepalive", 20.0),
    "CLARION_RESUME_ACCEPT_S": ("resume_accept", 30.0),
    "CLARION_LIVE_CONFIRM_S": ("live_confirm", 35.0),
    "CLARION_WATCHDOG_S": ("watchdog", 15.0),
    "CLARION_PERSIST_S": ("persist", 30.0),
}


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings = Settings.load(env={"CLARION_HOME": str(tmp_path)})
    assert settings.host == "127.0.0.1"
    assert settings.port == 8787
    assert settings.database_url == f"sqlite:///{tmp_path / 'clarion.db'}"
    assert settings.bus_url == "memory"
    assert settings.config_file is None
    assert settings.auth is False
    assert settings.failpoints == ""
    assert settings.timeouts == Timeouts()
    assert list(settings.agents) == [BUILTIN_PROFILE]


def test_clarion_home_defaults_to_the_home_directory() -> None:
    settings = Settings.load(env={})
    assert settings.database_url == f"sqlite:///{Path.home() / '.clarion' / 'clarion.db'}"


def test_env_vars_override_defaults(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("")
    env = {
        "CLARION_HOST": "0.0.0.0",
        "CLARION_PORT": "9000",
        "CLARION_DATABASE_URL": "postgresql://db/x",
        "CLARION_BUS_URL": "nats://n:4222",
        "CLARION_CONFIG": str(config),
        "CLARION_AUTH": "1",
        "CLARION_FAILPOINTS": "summary.cas=error",
    }
    settings = Settings.load(env=env)
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert settings.database_url == "postgresql://db/x"
    assert settings.bus_url == "nats://n:4222"
    assert settings.config_file == str(config)
    assert settings.auth is True
    assert settings.failpoints == "summary.cas=error"


def test_flags_override_env_vars(tmp_path: Path) -> None:
    env_config, flag_config = tmp_path / "env.toml", tmp_path / "flag.toml"
    env_config.write_text("")
    flag_config.write_text('[agents.mine]\ncommand = ["mine"]\n')
    env = {
        "CLARION_HOST": "0.0.0.0",
        "CLARION_PORT": "9000",
        "CLARION_DATABASE_URL": "postgresql://db/x",
        "CLARION_BUS_URL": "nats://n:4222",
        "CLARION_CONFIG": str(env_config),
        "CLARION_AUTH": "1",
    }
    settings = Settings.load(
        host="10.0.0.1",
        port=8000,
        database_url="sqlite:///other.db",
        bus_url="memory",
        config_file=str(flag_config),
        auth=False,
        env=env,
    )
    assert (settings.host, settings.port) == ("10.0.0.1", 8000)
    assert settings.database_url == "sqlite:///other.db"
    assert settings.bus_url == "memory"
    assert settings.config_file == str(flag_config)
    assert settings.auth is False
    assert "mine" in settings.agents


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on"])
def test_auth_env_truthy_values_turn_auth_on(value: str) -> None:
    assert Settings.load(env={"CLARION_AUTH": value}).auth is True


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off"])
def test_auth_env_falsy_values_leave_auth_off(value: str) -> None:
    assert Settings.load(env={"CLARION_AUTH": value}).auth is False


def test_an_unrecognised_auth_value_is_refused() -> None:
    with pytest.raises(ValueError, match="CLARION_AUTH"):
        Settings.load(env={"CLARION_AUTH": "maybe"})


@pytest.mark.parametrize("value", ["eighty", "80.5", "-1", "65536"])
def test_a_bad_port_env_var_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match="CLARION_PORT"):
        Settings.load(env={"CLARION_PORT": value})


def test_a_bad_port_flag_is_refused() -> None:
    with pytest.raises(ValueError, match="port"):
        Settings.load(port=70000, env={})


@pytest.mark.parametrize(("var", "field_default"), TIMEOUT_VARS.items())
def test_each_timeout_reads_its_env_var(var: str, field_default: tuple[str, float]) -> None:
    field, default = field_default
    assert getattr(Timeouts.from_env({}), field) == default
    assert getattr(Timeouts.from_env({var: "0.25"}), field) == 0.25
    assert getattr(Timeouts.from_env({var: ""}), field) == default
    others = Timeouts.from_env({var: "0.25"})
    for other_field, other_default in TIMEOUT_VARS.values():
        if other_field != field:
            assert getattr(others, other_field) == other_default


@pytest.mark.parametrize("var", TIMEOUT_VARS)
@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan", "inf"])
def test_a_bad_timeout_is_refused_naming_its_variable(var: str, value: str) -> None:
    with pytest.raises(ValueError, match=var):
        Settings.load(env={var: value})


def test_timeouts_reach_settings() -> None:
    settings = Settings.load(env={"CLARION_WATCHDOG_S": "1.5"})
    assert settings.timeouts.watchdog == 1.5


# --------------------------------------------------------------------------- agent profiles


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "clarion.toml"
    path.write_text(text)
    return str(path)


def test_the_builtin_profile_always_exists() -> None:
    profiles = load_agent_profiles(None)
    builtin = profiles[BUILTIN_PROFILE]
    assert builtin.command == (sys.executable, "-m", "clarion.agents.builtin")


def test_valid_profiles_are_loaded_beside_builtin(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        """
[agents.claude]
command = ["npx", "@agentclientprotocol/claude-agent-acp"]
env = { ANTHROPIC_LOG = "debug" }
cwd = "/tmp"

[agents.plain]
command = ["plain-agent"]
""",
    )
    profiles = load_agent_profiles(config)
    assert set(profiles) == {BUILTIN_PROFILE, "claude", "plain"}
    claude = profiles["claude"]
    assert claude.command == ("npx", "@agentclientprotocol/claude-agent-acp")
    assert dict(claude.env) == {"ANTHROPIC_LOG": "debug"}
    assert claude.cwd == "/tmp"
    assert dict(profiles["plain"].env) == {}
    assert profiles["plain"].cwd is None


def test_a_config_without_agents_still_has_builtin(tmp_path: Path) -> None:
    assert list(load_agent_profiles(write(tmp_path, "[other]\nx = 1\n"))) == [BUILTIN_PROFILE]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[agents.a]\ncommand = "not-a-list"\n', "agents.a.command"),
        ("[agents.a]\ncommand = []\n", "agents.a.command"),
        ('[agents.a]\ncommand = ["ok", 3]\n', "agents.a.command"),
        ('[agents.a]\ncommand = [""]\n', "agents.a.command"),
        ("[agents.a]\ncwd = '/tmp'\n", "agents.a.command"),
        ('[agents.a]\ncommand = ["x"]\nenv = { N = 1 }\n', "agents.a.env"),
        ('[agents.a]\ncommand = ["x"]\nenv = "A=1"\n', "agents.a.env"),
        ('[agents.a]\ncommand = ["x"]\ncwd = 3\n', "agents.a.cwd"),
        ("agents = 3\n", r"\[agents\] must be a table"),
        ("[agents]\na = 3\n", r"\[agents.a\] must be a table"),
        ("this is not toml", "not valid TOML"),
    ],
)
def test_an_invalid_profile_is_refused_naming_it(tmp_path: Path, text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        load_agent_profiles(write(tmp_path, text))


def test_a_missing_config_file_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ValueError, match="config file not found"):
        Settings.load(config_file=str(missing), env={})


def test_a_config_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read config file"):
        load_agent_profiles(str(tmp_path))


def test_the_config_env_var_is_read(tmp_path: Path) -> None:
    config = write(tmp_path, '[agents.envy]\ncommand = ["e"]\n')
    assert "envy" in Settings.load(env={"CLARION_CONFIG": config}).agents


def test_a_profile_reads_its_permission_policy_and_start_timeout(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        '[agents.claude]\ncommand = ["npx", "@zed-industries/claude-agent-acp"]\n'
        "start_timeout_s = 120\n"
        '[agents.claude.permissions]\nallow = ["read", "search"]\nreject = ["delete"]\n'
    )
    profile = load_agent_profiles(str(config))["claude"]
    assert profile.permissions_allow == frozenset({"read", "search"})
    assert profile.permissions_reject == frozenset({"delete"})
    assert profile.start_timeout == 120.0
    assert load_agent_profiles(None)[BUILTIN_PROFILE].permissions_allow == frozenset()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('allow = ["write"]', "unknown tool kind(s) write"),
        ('allow = "read"', "must be a list of tool kinds"),
        ('allow = ["read"]\nreject = ["read"]', "read both allowed and rejected"),
        ('ask = ["edit"]', "unknown key(s) ask"),
    ],
)
def test_a_bad_permission_policy_is_refused_naming_the_profile(
    tmp_path: Path, table: str, message: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        f'[agents.bad]\ncommand = ["{sys.executable}"]\n[agents.bad.permissions]\n{table}\n'
    )
    with pytest.raises(ValueError, match=r"agents\.bad") as refused:
        load_agent_profiles(str(config))
    assert message in str(refused.value)


def test_a_bad_start_timeout_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[agents.x]\ncommand = ["{sys.executable}"]\nstart_timeout_s = 0\n')
    with pytest.raises(ValueError, match="start_timeout_s"):
        load_agent_profiles(str(config))


# ------------------------------------------------------------------ webhooks


def _webhooks(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "hooks.toml"
    path.write_text(text)
    return Settings.load(config_file=str(path), env={"CLARION_HOME": str(tmp_path)})


def test_webhooks_are_read_with_all_events_by_default(tmp_path: Path) -> None:
    settings = _webhooks(
        tmp_path,
        '[[webhooks]]\nurl = "https://hooks.example/a"\nsecret = "k"\n'
        '[[webhooks]]\nurl = "http://127.0.0.1:9/b"\nsecret = "k2"\n'
        'events = ["permission.requested"]\n',
    )
    first, second = settings.webhooks
    assert first.url == "https://hooks.example/a" and len(first.events) == 9
    assert second.events == frozenset({"permission.requested"})
    assert settings.delivery_policy.attempts >= 10
    assert settings.delivery_policy.timeout_s == 5.0


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[[webhooks]]\nurl = "ftp://x/"\nsecret = "k"\n', "webhooks[1].url must be an http"),
        ('[[webhooks]]\nurl = "not a url"\nsecret = "k"\n', "webhooks[1].url must be an http"),
        ('[[webhooks]]\nurl = "http://x/"\n', "webhooks[1].secret must be a non-empty"),
        (
            '[[webhooks]]\nurl = "http://x/"\nsecret = "k"\nevents = ["task.created"]\n',
            "unknown event(s) task.created",
        ),
        ('[[webhooks]]\nurl = "http://x/"\nsecret = "k"\nretries = 3\n', "unknown key(s) retries"),
        ('webhooks = "http://x/"\n', "webhooks must be an array of tables"),
        (
            '[[webhooks]]\nurl = "http://x/"\nsecret = "k"\n[[webhooks]]\nurl = "http://x/"\n'
            'secret = "j"\n',
            "configured twice",
        ),
    ],
)
def test_bad_webhook_config_is_refused_with_a_clear_reason(
    tmp_path: Path, text: str, says: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        _webhooks(tmp_path, text)


def test_webhook_attempts_below_ten_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 10"):
        Settings.load(env={"CLARION_HOME": str(tmp_path), "CLARION_WEBHOOK_ATTEMPTS": "3"})


_CLUSTER_ENV = {
    "CLARION_CLUSTER": "1",
    "CLARION_DATABASE_URL": "postgresql://u@db/clarion",
    "CLARION_BUS_URL": "nats://nats:4222",
}


def test_cluster_mode_reads_its_env_vars() -> None:
    env = {
        **_CLUSTER_ENV,
        "CLARION_ADVERTISE_URL": "http://replica-a:8787/",
        "CLARION_REPLICA_TIMEOUT_S": "4",
    }
    settings = Settings.load(env=env)
    assert settings.cluster is True
    assert settings.advertise_url == "http://replica-a:8787"
    assert settings.replica_timeout == 4.0


def test_cluster_mode_is_off_by_default_with_a_ten_second_replica_timeout() -> None:
    settings = Settings.load(env={})
    assert settings.cluster is False
    assert settings.advertise_url is None
    assert settings.replica_timeout == 10.0


@pytest.mark.parametrize(
    ("override", "needs"),
    [
        ({"CLARION_DATABASE_URL": "sqlite:///x.db"}, "needs PostgreSQL"),
        ({"CLARION_BUS_URL": "memory"}, "needs NATS"),
    ],
)
def test_cluster_mode_refuses_sqlite_or_the_memory_bus(
    override: dict[str, str], needs: str
) -> None:
    with pytest.raises(ValueError, match=needs):
        Settings.load(env={**_CLUSTER_ENV, **override})


@pytest.mark.parametrize(
    ("var", "value"),
    [("CLARION_REPLICA_TIMEOUT_S", "0"), ("CLARION_ADVERTISE_URL", "replica-a:8787")],
)
def test_bad_cluster_settings_are_refused_naming_them(var: str, value: str) -> None:
    with pytest.raises(ValueError, match=var):
        Settings.load(env={**_CLUSTER_ENV, var: value})


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@db:5432/x", "postgresql://u:***@db:5432/x"),
        ("postgresql://u:secret@db/x?sslmode=require", "postgresql://u:***@db/x?sslmode=require"),
        ("postgresql://postgres@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test"),
        ("sqlite:////var/lib/clarion/clarion.db", "sqlite:////var/lib/clarion/clarion.db"),
    ],
)
def test_a_database_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted(url) == shown


# ------------------------------------------------------------------ idle stop


def test_an_agent_stops_after_ten_idle_minutes_by_default(tmp_path: Path) -> None:
    config = write(tmp_path, '[agents.plain]\ncommand = ["plain-agent"]\n')
    profiles = load_agent_profiles(config)
    assert profiles["plain"].idle_stop_after == 600.0
    assert profiles[BUILTIN_PROFILE].idle_stop_after == 600.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ('"45s"', 45.0),
        ('"30m"', 1800.0),
        ('"8h"', 28800.0),
        ('"2d"', 172800.0),
        ('"0"', 0.0),
        ("0", 0.0),
        ('"0s"', 0.0),
    ],
)
def test_a_profile_reads_its_idle_stop_duration(tmp_path: Path, value: str, seconds: float) -> None:
    config = write(
        tmp_path, f'[agents.plain]\ncommand = ["plain-agent"]\nagent_idle_stop_after = {value}\n'
    )
    assert load_agent_profiles(config)["plain"].idle_stop_after == seconds


def test_the_builtin_profile_takes_an_idle_stop_without_a_command(tmp_path: Path) -> None:
    config = write(tmp_path, '[agents.builtin]\nagent_idle_stop_after = "2s"\n')
    builtin = load_agent_profiles(config, home=tmp_path)[BUILTIN_PROFILE]
    assert builtin.idle_stop_after == 2.0
    assert builtin.command == (sys.executable, "-m", "clarion.agents.builtin")
    # Its own home, not Clarion's: no CLARION_* reaches an agent its profile does not name.
    assert dict(builtin.env) == {"HOME": str((tmp_path / "agent-homes" / "builtin").resolve())}


@pytest.mark.parametrize("value", ['"10"', '"-5m"', '"1.5h"', '"5w"', '"m"', "600", "true", '""'])
def test_a_bad_idle_stop_duration_is_refused_naming_the_file_and_key(
    tmp_path: Path, value: str
) -> None:
    config = write(
        tmp_path, f'[agents.plain]\ncommand = ["plain-agent"]\nagent_idle_stop_after = {value}\n'
    )
    with pytest.raises(
        ValueError, match=r"clarion\.toml: agents\.plain\.agent_idle_stop_after"
    ) as bad:
        load_agent_profiles(config)
    assert "\n" not in str(bad.value)
