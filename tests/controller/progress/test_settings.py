"""controller/progress/settings.py: the contract's defaults, and settings that cannot work
refused at once."""

from __future__ import annotations

import dataclasses

import pytest

from controller.progress.settings import ProgressSettings


def test_the_defaults_are_the_contract() -> None:
    settings = ProgressSettings()
    assert (settings.enabled, settings.port, settings.audience) == (
        True,
        8444,
        "mxjob.kubeflow.org",
    )
    assert (settings.write_interval, settings.token_cache_seconds) == (5.0, 60.0)
    assert settings.max_body_bytes == 64 * 1024
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes",
    [
        {"port": 70000},
        {"write_interval": 0},
        {"token_cache_seconds": -1},
        {"token_cache_size": 0},
        {"max_body_bytes": 10},
        {"audience": ""},
    ],
)
def test_settings_that_cannot_work_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ProgressSettings(**changes)  # type: ignore[arg-type]
