"""The API's times: written in UTC to the second (``MicroTime`` to the microsecond), read back
whatever the offset."""

from __future__ import annotations

import datetime

from shared.apitime import format_micro_time, format_time, parse_time

NOW = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_a_written_time_reads_back_equal() -> None:
    assert format_time(NOW) == "2030-01-02T03:04:05Z"
    assert parse_time(format_time(NOW)) == NOW


def test_an_offset_or_a_micro_time_reads_as_the_same_moment() -> None:
    assert parse_time("2030-01-02T05:04:05+02:00") == NOW
    assert parse_time("2030-01-02T03:04:05.000000Z") == NOW
    assert parse_time("2030-01-02T03:04:05") == NOW  # no zone: UTC, as the API means


def test_a_micro_time_keeps_its_microseconds_and_reads_back_equal() -> None:
    """A Lease's ``renewTime`` (controller/runtime/election.py), six fraction digits always."""
    moment = NOW.replace(microsecond=250)
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert format_micro_time(moment.astimezone(east)) == "2030-01-02T03:04:05.000250Z"
    assert parse_time(format_micro_time(moment)) == moment


def test_what_is_not_a_time_reads_as_none() -> None:
    for value in (None, "", "not a time", 17):
        assert parse_time(value) is None
