"""shared/envflags.py: one rule for boolean environment variables; anything neither true nor
false is refused by the variable's name, never read as false."""

from __future__ import annotations

import pytest

from shared.envflags import FALSE_WORDS, TRUE_WORDS, NotABooleanError, parse_env_flag


@pytest.mark.parametrize("raw", ["1", "true", "yes", "on", "TRUE", "True", " on ", "Yes\n"])
def test_the_true_words_are_read_in_any_case_around_whitespace(raw: str) -> None:
    assert parse_env_flag(raw, variable="X") is True


@pytest.mark.parametrize("raw", ["0", "false", "no", "off", "FALSE", "Off", " no ", "0\n"])
def test_the_false_words_are_read_in_any_case_around_whitespace(raw: str) -> None:
    assert parse_env_flag(raw, variable="X") is False


@pytest.mark.parametrize("raw", ["", " ", "ture", "enabled", "y", "n", "2", "-1", "true false"])
def test_a_value_neither_true_nor_false_is_refused_naming_the_variable_and_the_words(
    raw: str,
) -> None:
    with pytest.raises(NotABooleanError) as caught:
        parse_env_flag(raw, variable="MXJOB_X_SWITCH")
    assert str(caught.value) == (
        f"MXJOB_X_SWITCH={raw!r} is not a boolean: "
        "use one of 1, true, yes, on (on) or 0, false, no, off (off)"
    )


def test_a_refusal_is_a_value_error_for_callers_that_refuse_any_bad_value_alike() -> None:
    with pytest.raises(ValueError, match="MXJOB_X_SWITCH"):
        parse_env_flag("maybe", variable="MXJOB_X_SWITCH")


def test_no_word_means_both() -> None:
    assert set(TRUE_WORDS).isdisjoint(FALSE_WORDS)
    assert all(word == word.strip().lower() for word in (*TRUE_WORDS, *FALSE_WORDS))
