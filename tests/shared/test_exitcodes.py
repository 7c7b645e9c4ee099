"""shared/exitcodes.py: seed 000's exit-code table, and the rest of the range."""

from __future__ import annotations

import pytest

from shared.exitcodes import ExitClass, classify_exit, describe_exit


def test_exit_zero_succeeds() -> None:
    assert classify_exit(0) is ExitClass.SUCCEEDED


@pytest.mark.parametrize("code", [1, 2, 126, 127, 128, 139])
def test_the_seeds_permanent_codes_are_permanent(code: int) -> None:
    assert classify_exit(code) is ExitClass.PERMANENT


@pytest.mark.parametrize("code", [130, 137, 143, 138])
def test_the_seeds_retryable_codes_are_retryable(code: int) -> None:
    assert classify_exit(code) is ExitClass.RETRYABLE


def test_every_code_from_1_to_128_is_permanent() -> None:
    assert {classify_exit(code) for code in range(1, 129)} == {ExitClass.PERMANENT}


def test_every_code_from_129_up_except_sigsegv_is_retryable() -> None:
    codes = [code for code in range(129, 1024) if code != 139]
    assert {classify_exit(code) for code in codes} == {ExitClass.RETRYABLE}


def test_no_exit_code_is_an_eviction_or_preemption_and_is_retryable() -> None:
    assert classify_exit(None) is ExitClass.RETRYABLE


@pytest.mark.parametrize("code", [-1, -9, -255])
def test_negative_codes_are_permanent(code: int) -> None:
    assert classify_exit(code) is ExitClass.PERMANENT


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (0, "success"),
        (1, "general error"),
        (2, "misuse of shell builtins"),
        (126, "command invoked cannot execute"),
        (127, "command not found"),
        (128, "invalid argument to exit"),
        (130, "SIGINT (Control-C)"),
        (137, "SIGKILL"),
        (138, "SIGUSR1 (user-specified retryable error)"),
        (139, "SIGSEGV (invalid memory reference)"),
        (143, "SIGTERM"),
        (134, "SIGABRT"),
        (129, "SIGHUP"),
        (42, "application error"),
        (200, "unknown exit code"),
        (-1, "invalid exit code"),
        (None, "no exit code (pod evicted or preempted)"),
    ],
)
def test_describe_exit_names_the_cause(code: int | None, text: str) -> None:
    assert describe_exit(code) == text
