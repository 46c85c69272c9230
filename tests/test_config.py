"""Configuration from the environment: bad values stop the start with a clear error."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from refapi.config import Config


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity"])
def test_a_refill_that_is_not_a_finite_number_is_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match="REFAPI_RATE_LIMIT_REFILL"):
        Config.from_env({"REFAPI_RATE_LIMIT_REFILL": value})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0, -1.0])
def test_a_config_built_directly_refuses_a_refill_out_of_range(value):
    with pytest.raises(ValueError, match="REFAPI_RATE_LIMIT_REFILL"):
        Config(rate_limit_refill=value)


@pytest.mark.parametrize(
    "name",
    [
        "REFAPI_RATE_LIMIT_CAPACITY",
        "REFAPI_MAX_BODY_BYTES",
        "REFAPI_TRUST_PROXY",
        "REFAPI_AUTH_RATE_LIMIT",
        "REFAPI_REGISTER_RATE_LIMIT",
    ],
)
def test_an_integer_setting_refuses_other_text_naming_the_variable(name):
    with pytest.raises(ValueError, match=name):
        Config.from_env({name: "1.5e3"})


def test_the_environment_sets_what_it_names():
    config = Config.from_env(
        {"REFAPI_RATE_LIMIT_REFILL": "0.5", "REFAPI_RATE_LIMIT_CAPACITY": "7"}
    )
    assert (config.rate_limit_refill, config.rate_limit_capacity) == (0.5, 7)


@pytest.mark.parametrize("value", ["-1", "-2"])
def test_a_negative_trust_proxy_is_refused_naming_the_variable(value):
    # Werkzeug would read -1 as "the value after the first", which the client wrote.
    with pytest.raises(ValueError, match="REFAPI_TRUST_PROXY"):
        Config.from_env({"REFAPI_TRUST_PROXY": value})


def test_a_config_built_directly_refuses_a_negative_trust_proxy():
    with pytest.raises(ValueError, match="REFAPI_TRUST_PROXY"):
        Config(trust_proxy=-1)


def test_the_data_folder_is_data_unless_refapi_data_dir_names_another():
    # Not derived from DATABASE_URL: the password file goes there whatever the backend.
    elsewhere = {"DATABASE_URL": "sqlite:////var/lib/refapi/refapi.db"}
    assert Config.from_env(elsewhere).data_dir == "data"
    named = Config.from_env({**elsewhere, "REFAPI_DATA_DIR": "/srv/refapi"})
    assert named.data_dir == "/srv/refapi"


def test_the_password_buckets_default_and_come_from_the_environment():
    assert (Config().auth_rate_limit, Config().register_rate_limit) == (10, 5)
    config = Config.from_env(
        {"REFAPI_AUTH_RATE_LIMIT": "3", "REFAPI_REGISTER_RATE_LIMIT": "2"}
    )
    assert (config.auth_rate_limit, config.register_rate_limit) == (3, 2)


@pytest.mark.parametrize(
    "name", ["REFAPI_AUTH_RATE_LIMIT", "REFAPI_REGISTER_RATE_LIMIT"]
)
def test_a_password_bucket_that_admits_nothing_is_refused_at_start(name):
    with pytest.raises(ValueError, match="RATE_LIMIT must be positive, not"):
        Config.from_env({name: "0"})


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"REFAPI_LOG_FORMAT": "xml"}, "REFAPI_LOG_FORMAT must be json or text"),
        ({"REFAPI_METRICS": "127.0.0.1,not-a-network"}, "REFAPI_METRICS"),
        ({"REFAPI_METRICS": "10.0.0.0/33"}, "REFAPI_METRICS"),
    ],
    ids=["format", "address", "prefix"],
)
def test_observability_settings_are_checked_at_start(env, why):
    with pytest.raises(ValueError, match=why):
        Config.from_env(env)


def test_observability_settings_are_read_from_the_environment():
    config = Config.from_env(
        {"REFAPI_LOG_FORMAT": "text", "REFAPI_METRICS": "127.0.0.1, 10.0.0.0/8"}
    )
    assert config.log_format == "text"
    assert config.metrics == ("127.0.0.1", "10.0.0.0/8")


# docs/configuration.md, "Settings": every variable the service reads, with its default.
ROOT = Path(__file__).resolve().parents[1]
SETTING_NAME = re.compile(r'"((?:REFAPI|DATABASE)_[A-Z_]+)"')
TABLE_ROW = re.compile(r"^\|([^|]*)\|([^|]*)\|", re.MULTILINE)
CODE = re.compile(r"`([^`]*)`")


def documented_settings() -> dict[str, str | None]:
    """Each variable of the settings table, with its default when the row gives one
    in code (`10`), else None ("unset", "2 x CPU count")."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    table = text.split("## Settings", 1)[1].split("\n## ", 1)[0]
    settings: dict[str, str | None] = {}
    for names_cell, default_cell in TABLE_ROW.findall(table):
        names, defaults = CODE.findall(names_cell), CODE.findall(default_cell)
        for i, name in enumerate(names):
            settings[name] = defaults[i] if len(defaults) == len(names) else None
    return settings


def test_every_setting_the_service_reads_is_in_the_configuration_guide():
    read = set()
    for source in ("config.py", "gunicorn.conf.py"):
        read |= set(SETTING_NAME.findall((ROOT / source).read_text()))
    assert "REFAPI_AUTH_RATE_LIMIT" in read and "REFAPI_BIND" in read
    assert sorted(read - set(documented_settings())) == []


def test_each_documented_default_is_the_default():
    # Setting a variable to its documented default changes nothing.
    settings = documented_settings()
    assert settings["REFAPI_TOKEN_TTL"] == "3600"
    for name, default in settings.items():
        if default is not None:
            assert Config.from_env({name: default}) == Config.from_env({}), name


def test_the_lab_is_on_unless_refapi_lab_is_0_and_its_delay_is_bounded():
    assert Config.from_env({}).lab is True
    assert Config.from_env({"REFAPI_LAB": "0"}).lab is False
    assert Config.from_env({"REFAPI_LAB_MAX_DELAY": "2.5"}).lab_max_delay == 2.5
    with pytest.raises(ValueError, match="REFAPI_LAB must be 0 or 1"):
        Config.from_env({"REFAPI_LAB": "off"})
    with pytest.raises(ValueError, match="REFAPI_LAB_MAX_DELAY"):
        Config.from_env({"REFAPI_LAB_MAX_DELAY": "0"})


# -- the server's slots (docs/operating.md, "Slow work shares the host") -------------


def test_the_servers_workers_threads_and_timeout_come_from_the_environment():
    config = Config.from_env(
        {"REFAPI_WORKERS": "3", "REFAPI_THREADS": "2", "REFAPI_WORKER_TIMEOUT": "40"}
    )
    assert (config.workers, config.threads, config.worker_timeout) == (3, 2, 40)
    assert config.slots == 6  # workers x threads
    default = Config.from_env({})
    assert (default.workers, default.threads, default.worker_timeout) == (
        2 * (os.cpu_count() or 1), 1, 30,
    )  # fmt: skip


@pytest.mark.parametrize(
    "name", ["REFAPI_WORKERS", "REFAPI_THREADS", "REFAPI_WORKER_TIMEOUT"]
)
@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_server_setting_that_is_not_a_positive_whole_number_is_refused(name, value):
    with pytest.raises(ValueError, match=name):
        Config.from_env({name: value})


@pytest.mark.parametrize(
    ("delay", "timeout"), [("5", "10"), ("15", "30"), ("20", "30"), ("2", "3")]
)
def test_a_lab_delay_of_half_the_worker_timeout_or_more_is_refused(delay, timeout):
    # A request has half the timeout to arrive: a delay that long outlasts its worker.
    env = {"REFAPI_LAB_MAX_DELAY": delay, "REFAPI_WORKER_TIMEOUT": timeout,
           "REFAPI_PROXY_TOTAL_TIMEOUT": "1"}  # fmt: skip
    with pytest.raises(ValueError) as refused:
        Config.from_env(env)
    said = str(refused.value)
    assert said.startswith(f"REFAPI_LAB_MAX_DELAY ({delay}) must be under half")
    assert f"REFAPI_WORKER_TIMEOUT ({timeout})" in said and "\n" not in said
    # Just under half is served, and without the lab nothing is delayed at all.
    assert Config.from_env({**env, "REFAPI_LAB_MAX_DELAY": str(int(timeout) / 2 - 0.1)})
    assert Config.from_env({**env, "REFAPI_LAB": "0"}).lab is False


def test_more_workers_or_threads_than_a_host_could_run_are_refused():
    # REFAPI_WORKERS=100000 was served: gunicorn forked until memory ran out.
    most = 32 * (os.cpu_count() or 1)
    said = rf"REFAPI_WORKERS \(100000\) must be at most {most} "
    with pytest.raises(ValueError, match=said):
        Config.from_env({"REFAPI_WORKERS": "100000"})
    assert Config.from_env({"REFAPI_WORKERS": str(most)}).workers == most
    with pytest.raises(ValueError, match=r"REFAPI_THREADS \(129\) must be at most 128"):
        Config.from_env({"REFAPI_SERVER": "granian", "REFAPI_THREADS": "129"})
    granian = {"REFAPI_SERVER": "granian", "REFAPI_THREADS": "128"}
    assert Config.from_env(granian).threads == 128


def test_a_proxy_deadline_of_half_the_worker_timeout_or_more_is_refused():
    # A slow upstream held its worker past the timeout: killed, a 503 each time.
    env = {"REFAPI_WORKER_TIMEOUT": "8", "REFAPI_LAB_MAX_DELAY": "3"}
    with pytest.raises(ValueError) as refused:
        Config.from_env(env)
    assert str(refused.value).startswith(
        "REFAPI_PROXY_TOTAL_TIMEOUT (10) must be under half REFAPI_WORKER_TIMEOUT (8)"
    )
    assert Config.from_env({**env, "REFAPI_PROXY_TOTAL_TIMEOUT": "3.9"})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REFAPI_CORS_ORIGINS", "not an origin"),
        ("REFAPI_CORS_ORIGINS", "https://a.example,http://a.com/path"),
        ("REFAPI_LAB_REDIRECT_HOSTS", "http://x/"),
        ("REFAPI_LAB_REDIRECT_HOSTS", "a b"),
        ("REFAPI_DEPRECATION", "garbage"),
        ("REFAPI_DEPRECATION", "2027-01-01"),
        ("REFAPI_SUNSET", "garbage"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "a b"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "*"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "host+public"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "host:0"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "host:"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "-host"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "a..b"),
    ],
)
def test_a_malformed_list_or_date_is_refused(name, value):
    # Each was served, and meant nothing it could match or send (a hostile audit).
    named = "proxy allow-list" if name == "REFAPI_PROXY_ALLOWED_HOSTS" else name
    with pytest.raises(ValueError, match=named):
        Config.from_env({name: value})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REFAPI_CORS_ORIGINS", "*,https://a.example,http://localhost:3000"),
        ("REFAPI_LAB_REDIRECT_HOSTS", "Example.org,127.0.0.1,::1,my_service"),
        ("REFAPI_DEPRECATION", "@1798761600"),
        ("REFAPI_SUNSET", "Fri, 01 Jan 2027 00:00:00 GMT"),
        ("REFAPI_PROXY_ALLOWED_HOSTS", "example.com,[::1]:80+private,a.b."),
    ],
)
def test_a_well_formed_list_or_date_is_served(name, value):
    assert Config.from_env({name: value})


def test_a_token_ttl_past_ten_years_is_refused():
    # 10**20 was served, and every login was a 500: the expiry overflowed.
    said = r"REFAPI_TOKEN_TTL \(10{18}\) must be at most"
    with pytest.raises(ValueError, match=said):
        Config.from_env({"REFAPI_TOKEN_TTL": "1" + "0" * 18})
    ten_years = str(10 * 365 * 86_400)
    assert Config.from_env({"REFAPI_TOKEN_TTL": ten_years}).token_ttl == int(ten_years)


@pytest.mark.parametrize(
    ("name", "raw", "said"),
    [
        # Each was served: a demo create then overflowed SQLite's integer (500);
        # "usd" made every payment impossible; int() read 1_000 and "٣".
        ("REFAPI_DEMO_MAX_NOTES", "9" * 23, "REFAPI_DEMO_MAX_NOTES must be at most"),
        ("REFAPI_PAGE_SIZE_MAX", str(2**63), "REFAPI_PAGE_SIZE_MAX must be at most"),
        ("REFAPI_RATE_LIMIT_CAPACITY", "1_000", "must be an integer, got '1_000'"),
        ("REFAPI_RATE_LIMIT_CAPACITY", "\u0663", "must be an integer"),
        ("REFAPI_LAB_MAX_DELAY", "1_0.5", "must be a number"),
        ("REFAPI_CURRENCIES", "usd", r"upper-case letters \(USD,EUR\), not 'usd'"),
        ("REFAPI_CURRENCIES", "USD,US", "not 'US'"),
        ("REFAPI_CURRENCIES", ",,,", "not ''"),
        ("REFAPI_TOKEN_TTL", "-5", "REFAPI_TOKEN_TTL must be positive, not -5"),
        ("REFAPI_LOGIN_MAX_FAILURES", "0", "REFAPI_LOGIN_MAX_FAILURES must be"),
        ("REFAPI_MAX_BODY_BYTES", "-1", "REFAPI_MAX_BODY_BYTES must be positive"),
        ("REFAPI_JSON_MAX_DEPTH", "0", "REFAPI_JSON_MAX_DEPTH must lie in 1..100"),
        ("REFAPI_PAGE_SIZE_DEFAULT", "500", r"REFAPI_PAGE_SIZE_DEFAULT \(500\)"),
    ],
)
def test_a_refused_setting_names_its_variable(name, raw, said):
    with pytest.raises(ValueError, match=said):
        Config.from_env({name: raw})
    if name != "REFAPI_CURRENCIES":  # empty: none, which no payment can use
        assert Config.from_env({name: ""})  # empty: the default


def test_a_worker_timeout_past_a_day_is_refused():
    # Granian took 10**7 and failed with a traceback only when told to stop.
    with pytest.raises(ValueError, match=r"REFAPI_WORKER_TIMEOUT \(86401\) must be"):
        Config.from_env({"REFAPI_WORKER_TIMEOUT": "86401"})
    assert Config.from_env({"REFAPI_WORKER_TIMEOUT": "86400"}).worker_timeout == 86400
