"""Container logs as the kubelet answers them: CRI entries, query decoding, tail/since/limit."""

from __future__ import annotations

import pytest

from localkube.kubelet.crilog import (
    STDERR,
    STDOUT,
    Entry,
    LogOptions,
    LogRequestError,
    LogWriter,
    encode,
    format_timestamp,
    parse,
    parse_options,
    parse_timestamp,
    tail_start,
)

T0 = "2025-01-02T03:04:05.000000001Z"
T1 = "2025-01-02T03:04:06.500000000Z"
NOW = parse_timestamp("2025-01-02T03:05:00Z")


def entries(data: bytes) -> list[Entry]:
    parsed = [parse(line) for line in data.splitlines(keepends=True)]
    assert None not in parsed
    return [e for e in parsed if e is not None]


def render(options: LogOptions, stored: list[Entry]) -> bytes:
    return b"".join(LogWriter(options).render(stored))


def test_timestamps_are_fixed_width_utc_nanoseconds_and_round_trip() -> None:
    assert format_timestamp(1) == "1970-01-01T00:00:00.000000001Z"
    assert parse_timestamp(T0) == parse_timestamp("2025-01-02T05:04:05.000000001+02:00")
    assert format_timestamp(parse_timestamp(T1)) == T1
    with pytest.raises(ValueError):
        parse_timestamp("yesterday")


def test_complete_lines_are_full_entries_and_a_trailing_fragment_is_partial() -> None:
    data = encode(b"one\ntwo\nthr", stream=STDOUT, timestamp=T0)
    assert data == (f"{T0} stdout F one\n{T0} stdout F two\n{T0} stdout P thr\n".encode())
    stored = entries(data + encode(b"ee\n", stream=STDERR, timestamp=T1))
    assert [e.message for e in stored] == [b"one\n", b"two\n", b"thr", b"ee\n"]
    assert render(LogOptions(), stored) == b"one\ntwo\nthree\n"


def test_lines_that_are_not_cri_format_are_skipped() -> None:
    assert parse(b"garbage\n") is None
    assert parse(f"{T0} stdin F x\n".encode()) is None
    assert parse(f"{T0} stderr F  spaced \n".encode()) == Entry(T0, STDERR, False, b" spaced ")


def test_tail_counts_stored_lines_from_the_end() -> None:
    lines = [b"a", b"b", b"c"]
    assert tail_start(lines, None) == 0
    assert tail_start(lines, 2) == 1
    assert tail_start(lines, 0) == 3
    assert tail_start(lines, 10) == 0


def test_limit_bytes_cuts_the_answer_and_carries_over_between_pieces() -> None:
    writer = LogWriter(LogOptions(limit_bytes=6))
    first = b"".join(writer.render(entries(encode(b"abcd\n", stream=STDOUT, timestamp=T0))))
    assert (first, writer.exhausted) == (b"abcd\n", False)
    second = b"".join(writer.render(entries(encode(b"efgh\n", stream=STDOUT, timestamp=T0))))
    assert (second, writer.exhausted) == (b"e", True)


def test_timestamps_prefix_each_line_once_even_when_it_arrived_in_parts() -> None:
    stored = entries(
        encode(b"load", stream=STDOUT, timestamp=T0) + encode(b"ing\n", stream=STDOUT, timestamp=T1)
    )
    assert render(LogOptions(timestamps=True), stored) == f"{T0} loading\n".encode()


def test_since_leaves_out_older_entries_and_stream_selects_stdout_or_stderr() -> None:
    stored = entries(
        encode(b"old\n", stream=STDOUT, timestamp=T0)
        + encode(b"new\n", stream=STDOUT, timestamp=T1)
        + encode(b"oops\n", stream=STDERR, timestamp=T1)
    )
    assert render(LogOptions(since=T1), stored) == b"new\noops\n"
    assert render(LogOptions(streams=(STDERR,)), stored) == b"oops\n"


def test_query_is_decoded_with_the_api_servers_rules() -> None:
    options = parse_options(
        {
            "follow": ["true"],
            "previous": ["0"],
            "timestamps": ["False"],
            "tailLines": ["5"],
            "limitBytes": ["100"],
        },
        now_ns=NOW,
    )
    assert options == LogOptions(follow=True, tail_lines=5, limit_bytes=100)
    # Any value other than "0"/"false" is true, as apimachinery decodes a bool parameter.
    assert parse_options({"follow": ["yes"]}, now_ns=NOW).follow is True
    assert parse_options({"tail": ["all"], "tailLines": ["3"]}, now_ns=NOW).tail_lines is None
    assert parse_options({"tail": ["2"]}, now_ns=NOW).tail_lines == 2
    assert parse_options({"sinceSeconds": ["65"]}, now_ns=NOW).since == (
        "2025-01-02T03:03:55.000000000Z"
    )
    assert parse_options({"sinceTime": ["2025-01-02T03:04:06Z"]}, now_ns=NOW).since == (
        "2025-01-02T03:04:06.000000000Z"
    )
    assert parse_options({"stream": ["Stderr"]}, now_ns=NOW).streams == (STDERR,)


@pytest.mark.parametrize(
    ("query", "status", "names"),
    [
        ({"tailLines": ["ten"]}, 400, "tailLines"),
        ({"limitBytes": ["1.5"]}, 400, "limitBytes"),
        ({"sinceTime": ["noon"]}, 400, "sinceTime"),
        ({"tailLines": ["-1"]}, 422, "tailLines"),
        ({"limitBytes": ["0"]}, 422, "limitBytes"),
        ({"sinceSeconds": ["0"]}, 422, "sinceSeconds"),
        ({"sinceSeconds": ["5"], "sinceTime": ["2025-01-02T03:04:06Z"]}, 422, "sinceTime"),
        ({"stream": ["Both"]}, 422, "stream"),
        ({"stream": ["Stdout"], "tailLines": ["1"]}, 422, "tailLines"),
    ],
)
def test_bad_queries_are_refused_with_the_kubelets_status_and_the_parameter_named(
    query: dict[str, list[str]], status: int, names: str
) -> None:
    with pytest.raises(LogRequestError) as refused:
        parse_options(query, now_ns=NOW)
    assert refused.value.status == status
    assert names in refused.value.message
