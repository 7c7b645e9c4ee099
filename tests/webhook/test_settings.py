"""Webhook settings: defaults, environment, flags, and refusal of bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.settings import (
    DEFAULT_CERT_DIR,
    MIB,
    WebhookSettings,
    from_env_and_args,
    host_port,
)


def test_in_process_defaults_need_no_tls() -> None:
    settings = WebhookSettings()
    assert settings.cert_dir is None
    assert settings.cert_file is None and settings.key_file is None
    assert settings.bind == "0.0.0.0:9443"
    assert settings.max_body_bytes == 3 * MIB
    assert settings.keepalive > 90  # outlives the API server's idle-connection timeout
    assert 0 < settings.max_connection_age < settings.keepalive


def test_process_defaults_serve_tls_from_the_conventional_directory() -> None:
    settings = from_env_and_args([], environ={})
    assert settings.cert_dir == DEFAULT_CERT_DIR
    assert settings.cert_file == DEFAULT_CERT_DIR / "tls.crt"
    assert settings.key_file == DEFAULT_CERT_DIR / "tls.key"


def test_environment_sets_values_and_flags_win(tmp_path: Path) -> None:
    environ = {
        "MXJOB_WEBHOOK_BIND": "127.0.0.1:8443",
        "MXJOB_WEBHOOK_CERT_DIR": str(tmp_path),
        "MXJOB_WEBHOOK_WORKERS": "3",
        "MXJOB_WEBHOOK_THREADS": "2",
        "MXJOB_WEBHOOK_LOG_FORMAT": "json",
        "MXJOB_WEBHOOK_MAX_BODY_BYTES": "1024",
        "MXJOB_WEBHOOK_CERT_CHECK_INTERVAL": "0.25",
        "MXJOB_WEBHOOK_MAX_CONNECTION_AGE": "2.5",
    }
    settings = from_env_and_args(["--threads", "16", "--log-format", "text"], environ=environ)
    assert settings == WebhookSettings(
        bind="127.0.0.1:8443",
        cert_dir=tmp_path,
        workers=3,
        threads=16,
        log_format="text",
        max_body_bytes=1024,
        cert_check_interval=0.25,
        max_connection_age=2.5,
    )
    assert from_env_and_args(["--max-connection-age", "0"], environ=environ).max_connection_age == 0


@pytest.mark.parametrize(
    ("argv", "environ"),
    [
        (["--workers", "0"], {}),
        (["--threads", "x"], {}),
        (["--bind", "9443"], {}),
        (["--bind", "host:99999"], {}),
        (["--log-format", "xml"], {}),
        ([], {"MXJOB_WEBHOOK_LOG_FORMAT": "xml"}),
        ([], {"MXJOB_WEBHOOK_WORKERS": "many"}),
        ([], {"MXJOB_WEBHOOK_MAX_BODY_BYTES": "0"}),
        (["--max-connection-age", "-1"], {}),
    ],
)
def test_bad_values_exit_with_usage_error(argv: list[str], environ: dict[str, str]) -> None:
    with pytest.raises(SystemExit) as caught:
        from_env_and_args(argv, environ=environ)
    assert caught.value.code == 2


@pytest.mark.parametrize(
    ("bind", "expected"),
    [
        ("0.0.0.0:9443", ("0.0.0.0", 9443)),
        ("[::]:9443", ("::", 9443)),
        ("localhost:0", ("localhost", 0)),
    ],
)
def test_bind_addresses_split_into_host_and_port(bind: str, expected: tuple[str, int]) -> None:
    assert host_port(bind) == expected


def test_settings_refuse_bad_values_when_made() -> None:
    with pytest.raises(ValueError, match="threads"):
        WebhookSettings(threads=0)
    with pytest.raises(ValueError, match="log_format"):
        WebhookSettings(log_format="xml")  # type: ignore[arg-type]


def test_kueue_workloads_is_off_unless_turned_on_by_flag_or_environment() -> None:
    assert from_env_and_args([], environ={}).kueue_workloads is False
    assert from_env_and_args(["--kueue-workloads"], environ={}).kueue_workloads is True
    env = {"MXJOB_WEBHOOK_KUEUE_WORKLOADS": "true"}
    assert from_env_and_args([], environ=env).kueue_workloads is True
    assert from_env_and_args(["--no-kueue-workloads"], environ=env).kueue_workloads is False
    with pytest.raises(SystemExit):
        from_env_and_args([], environ={"MXJOB_WEBHOOK_KUEUE_WORKLOADS": "maybe"})


SWITCHES = sorted(
    name
    for name, field in WebhookSettings.__dataclass_fields__.items()
    if isinstance(field.default, bool)
)


def test_the_switches_are_kueue_workloads_metrics_secure_and_progress_reports() -> None:
    assert SWITCHES == ["kueue_workloads", "metrics_secure", "progress_reports"]


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_refuses_a_value_neither_true_nor_false_by_its_variable(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    variable = f"MXJOB_WEBHOOK_{name.upper()}"
    with pytest.raises(SystemExit) as caught:
        from_env_and_args([], environ={variable: "ture"})
    assert caught.value.code == 2  # argparse's usage error, as for a bad flag
    assert capsys.readouterr().err.endswith(
        f"error: {variable}='ture' is not a boolean: "
        "use one of 1, true, yes, on (on) or 0, false, no, off (off)\n"
    )


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_reads_the_shared_words_for_on_and_off(name: str) -> None:
    variable = f"MXJOB_WEBHOOK_{name.upper()}"
    for word in ("1", "True", " yes ", "ON"):
        assert getattr(from_env_and_args([], environ={variable: word}), name) is True
    for word in ("0", "FALSE", "no", "off"):
        assert getattr(from_env_and_args([], environ={variable: word}), name) is False


def test_a_bad_number_in_the_environment_is_refused_by_its_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        from_env_and_args([], environ={"MXJOB_WEBHOOK_WORKERS": "many"})
    assert "MXJOB_WEBHOOK_WORKERS='many' is not a valid workers value" in capsys.readouterr().err


def test_progress_reports_are_on_and_name_the_operators_namespace_by_default() -> None:
    settings = from_env_and_args([], environ={})
    assert settings.progress_reports is True
    assert settings.operator_namespace == "mxjob-system"
    told = from_env_and_args(
        ["--no-progress-reports"], environ={"MXJOB_WEBHOOK_OPERATOR_NAMESPACE": "ops"}
    )
    assert (told.progress_reports, told.operator_namespace) == (False, "ops")


def test_progress_reports_need_a_namespace() -> None:
    with pytest.raises(ValueError, match="operator_namespace"):
        WebhookSettings(operator_namespace="")
    assert WebhookSettings(progress_reports=False, operator_namespace="").operator_namespace == ""
