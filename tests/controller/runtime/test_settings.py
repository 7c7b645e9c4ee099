"""Settings: flags win over MXJOB_CONTROLLER_* env, which wins over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.runtime.settings import ControllerSettings, from_args


def test_defaults_suit_one_replica_in_a_cluster() -> None:
    settings = from_args([], environ={})
    assert settings.namespaces == () and settings.workers == 4
    assert not settings.leader_elect and settings.identity
    assert settings.pool_size == 4 + 3 + 4 + 2


def test_flags_set_every_option() -> None:
    settings = from_args(
        [
            "--kubeconfig",
            "/k",
            "--namespace",
            "a",
            "--namespace",
            "b",
            "--workers",
            "8",
            "--leader-elect",
            "--lease-namespace",
            "ops",
            "--lease-duration",
            "6",
            "--renew-deadline",
            "4",
            "--retry-period",
            "1",
            "--metrics-bind-address",
            ":9",
            "--log-format",
            "text",
            "--identity",
            "me",
        ],
        environ={},
    )
    assert settings == ControllerSettings(
        kubeconfig=Path("/k"),
        namespaces=("a", "b"),
        workers=8,
        leader_elect=True,
        lease_namespace="ops",
        lease_duration=6,
        renew_deadline=4,
        retry_period=1,
        metrics_bind_address=":9",
        log_format="text",
        identity="me",
    )
    assert settings.pool_size == 8 + 6 + 4 + 2


def test_environment_fills_what_flags_leave_out() -> None:
    env = {
        "MXJOB_CONTROLLER_WORKERS": "2",
        "MXJOB_CONTROLLER_NAMESPACES": "x,y",
        "MXJOB_CONTROLLER_LEADER_ELECT": "true",
    }
    settings = from_args(["--workers", "3"], environ=env)
    assert (settings.workers, settings.namespaces, settings.leader_elect) == (3, ("x", "y"), True)


def test_every_number_and_path_setting_read_from_the_environment_has_its_type() -> None:
    """A setting whose default is a number or a path reaches the settings as that type, not as
    the environment's string."""
    defaults = ControllerSettings()
    typed = {
        name: type(getattr(defaults, name))
        for name in ControllerSettings.__dataclass_fields__
        if isinstance(getattr(defaults, name), int | float)
        and not isinstance(getattr(defaults, name), bool)
    }
    env = {f"MXJOB_CONTROLLER_{name.upper()}": "7" for name in typed}
    settings = from_args([], environ=env)
    wrong = {name: getattr(settings, name) for name in typed if getattr(settings, name) != 7}
    assert not wrong, f"read as strings, not numbers: {wrong}"
    assert from_args([], environ={"MXJOB_CONTROLLER_KUBECONFIG": "/k"}).kubeconfig == Path("/k")


def test_zero_workers_is_refused() -> None:
    with pytest.raises(SystemExit):
        from_args(["--workers", "0"], environ={})


def test_old_address_flags_still_work_but_are_hidden_and_named_deprecated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = from_args(["--metrics-address", ":1", "--health-address", ":2"], environ={})
    assert (settings.metrics_bind_address, settings.health_probe_bind_address) == (":1", ":2")
    err = capsys.readouterr().err
    assert "--metrics-address is deprecated, use --metrics-bind-address" in err
    assert "--health-address is deprecated, use --health-probe-bind-address" in err
    with pytest.raises(SystemExit):
        from_args(["--help"], environ={})
    usage = capsys.readouterr().out
    assert "--metrics-bind-address" in usage and "--health-probe-bind-address" in usage
    assert "--metrics-address" not in usage and "--health-address" not in usage


def test_old_address_environment_variables_still_work() -> None:
    env = {
        "MXJOB_CONTROLLER_METRICS_ADDRESS": ":1",
        "MXJOB_CONTROLLER_HEALTH_PROBE_BIND_ADDRESS": ":3",
        "MXJOB_CONTROLLER_HEALTH_ADDRESS": ":2",
    }
    settings = from_args([], environ=env)
    assert (settings.metrics_bind_address, settings.health_probe_bind_address) == (":1", ":3")


def test_gang_scheduler_is_auto_unless_told() -> None:
    assert from_args([], environ={}).gang_scheduler == "auto"
    assert from_args(["--gang-scheduler", "none"], environ={}).gang_scheduler == "none"
    env = {"MXJOB_CONTROLLER_GANG_SCHEDULER": "native"}
    assert from_args([], environ=env).gang_scheduler == "native"
    with pytest.raises(SystemExit):
        from_args(["--gang-scheduler", "kueue"], environ={})
    with pytest.raises(SystemExit):
        from_args([], environ={"MXJOB_CONTROLLER_GANG_SCHEDULER": "kueue"})


def test_kueue_workloads_is_off_unless_turned_on_by_flag_or_environment() -> None:
    assert from_args([], environ={}).kueue_workloads is False
    assert from_args(["--kueue-workloads"], environ={}).kueue_workloads is True
    env = {"MXJOB_CONTROLLER_KUEUE_WORKLOADS": "true"}
    assert from_args([], environ=env).kueue_workloads is True
    assert from_args(["--no-kueue-workloads"], environ=env).kueue_workloads is False


def test_kueue_workloads_watches_workloads_too() -> None:
    plain = from_args([], environ={})
    routed = from_args(["--kueue-workloads"], environ={})
    assert routed.pool_size == plain.pool_size + 1


def test_progress_reports_are_served_on_8444_unless_turned_off() -> None:
    settings = from_args([], environ={})
    assert (settings.progress_reports, settings.progress_bind_address) == (True, ":8444")
    env = {
        "MXJOB_CONTROLLER_PROGRESS_REPORTS": "false",
        "MXJOB_CONTROLLER_PROGRESS_BIND_ADDRESS": "127.0.0.1:9444",
    }
    told = from_args([], environ=env)
    assert (told.progress_reports, told.progress_bind_address) == (False, "127.0.0.1:9444")
    assert told.pool_size == settings.pool_size - 2, "no status writer, no TokenReviews"
    assert from_args(["--progress-reports"], environ=env).progress_reports is True


def test_the_progress_endpoint_is_a_server_of_its_own() -> None:
    with pytest.raises(SystemExit, match="--progress-bind-address must differ"):
        from_args(["--progress-bind-address=:8443"], environ={})
    off = from_args(["--progress-bind-address=:8443", "--no-progress-reports"], environ={})
    assert off.progress_reports is False


def test_webhook_certificates_are_managed_only_when_asked_with_their_own_check_interval() -> None:
    assert from_args([], environ={}).manage_webhook_certificates is False
    told = from_args(
        ["--manage-webhook-certificates", "--certificate-check-interval", "2.5"], environ={}
    )
    assert told.manage_webhook_certificates is True
    assert told.certificate_check_interval == 2.5
    env = {"MXJOB_CONTROLLER_MANAGE_WEBHOOK_CERTIFICATES": "true",
           "MXJOB_CONTROLLER_CERTIFICATE_NAMESPACE": "ops"}  # fmt: skip
    from_env = from_args([], environ=env)
    assert from_env.manage_webhook_certificates is True
    assert from_env.certificate_namespace == "ops"


def test_a_certificate_check_interval_that_is_not_positive_is_refused_by_name() -> None:
    with pytest.raises(SystemExit, match="--certificate-check-interval must be positive"):
        from_args(["--certificate-check-interval", "0"], environ={})


SWITCHES = sorted(
    name
    for name, field in ControllerSettings.__dataclass_fields__.items()
    if isinstance(field.default, bool)
)


def test_the_switches_include_leader_election() -> None:
    assert "leader_elect" in SWITCHES and "manage_webhook_certificates" in SWITCHES


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_refuses_a_value_neither_true_nor_false_by_its_variable(name: str) -> None:
    variable = f"MXJOB_CONTROLLER_{name.upper()}"
    # "enabled" was read as false for leader election once: two replicas would both reconcile.
    with pytest.raises(SystemExit) as caught:
        from_args([], environ={variable: "enabled"})
    assert str(caught.value.code) == (
        f"mxjob-controller: {variable}='enabled' is not a boolean: "
        "use one of 1, true, yes, on (on) or 0, false, no, off (off)"
    )


@pytest.mark.parametrize("name", SWITCHES)
def test_every_switch_reads_the_shared_words_for_on_and_off(name: str) -> None:
    variable = f"MXJOB_CONTROLLER_{name.upper()}"
    for word in ("1", "True", " yes ", "ON"):
        assert getattr(from_args([], environ={variable: word}), name) is True
    for word in ("0", "FALSE", "no", "off"):
        assert getattr(from_args([], environ={variable: word}), name) is False
