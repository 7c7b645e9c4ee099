"""Container logs as a kubelet keeps and serves them: pure functions, no files, no sockets.

The test kubelet stores each container's output in the CRI log format a container runtime writes
(``<RFC3339Nano> <stream> <F|P> <text>``, one entry per line of output, ``P`` for a line cut
short), and answers ``GET /containerLogs/<ns>/<pod>/<container>`` the way the kubelet does
(``pkg/kubelet/server/server.go`` and ``k8s.io/cri-client/pkg/logs``): the same query parameters,
the same decoding rules, the same tail, since, timestamp and byte-limit semantics. Keeping that
logic here lets unit tests pin it down without a control plane; :mod:`localkube.kubelet.logserver`
only moves bytes.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

STDOUT = "stdout"
STDERR = "stderr"
STREAMS = {"All": (STDOUT, STDERR), "Stdout": (STDOUT,), "Stderr": (STDERR,)}
"""The ``stream`` query parameter's values and the CRI streams each one selects."""

_ENTRY = re.compile(rb"^(\S+) (stdout|stderr) ([FP]) (.*)$", re.DOTALL)
_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$", re.IGNORECASE
)


class LogRequestError(Exception):
    """A request the kubelet refuses: ``status`` is the HTTP code, the message is the body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# -- timestamps ---------------------------------------------------------------------------------
def format_timestamp(ns: int) -> str:
    """Nanoseconds since the epoch as fixed-width RFC3339Nano in UTC (the CRI's ``timeFormatOut``).

    Fixed width makes two timestamps compare correctly as strings, which ``sinceTime`` relies on.
    """
    seconds, fraction = divmod(ns, 1_000_000_000)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"


def parse_timestamp(text: str) -> int:
    """RFC3339 (optionally with up to nine fraction digits) as nanoseconds since the epoch."""
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"not an RFC3339 time: {text!r}")
    whole, fraction, zone = match.groups()
    offset = "+00:00" if zone.upper() == "Z" else zone
    moment = datetime.datetime.fromisoformat(whole + offset)
    nanos = int((fraction or ".")[1:].ljust(9, "0") or 0)
    return int(moment.timestamp()) * 1_000_000_000 + nanos


# -- the stored format --------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One CRI log line: when, which stream, and the text (``partial``: no newline ended it)."""

    timestamp: str
    stream: str
    partial: bool
    text: bytes

    @property
    def message(self) -> bytes:
        """What the container wrote: the text, with its newline unless the line was cut short."""
        return self.text if self.partial else self.text + b"\n"


def encode(data: bytes, *, stream: str, timestamp: str) -> bytes:
    """CRI log lines for one chunk of a container's output.

    Every complete line becomes an ``F`` entry; a trailing fragment becomes a ``P`` entry now,
    rather than waiting for its newline, so a follower sees a prompt or a progress bar at once.
    """
    lines = data.split(b"\n")
    out = [b"%s %s F %s\n" % (timestamp.encode(), stream.encode(), line) for line in lines[:-1]]
    if lines[-1]:
        out.append(b"%s %s P %s\n" % (timestamp.encode(), stream.encode(), lines[-1]))
    return b"".join(out)


def parse(line: bytes) -> Entry | None:
    """One stored line back into an :class:`Entry`; None for a line that is not CRI format."""
    match = _ENTRY.match(line[:-1] if line.endswith(b"\n") else line)
    if match is None:
        return None
    timestamp, stream, tag, text = match.groups()
    return Entry(timestamp.decode(), stream.decode(), tag == b"P", text)


def tail_start(lines: Sequence[bytes], tail_lines: int | None) -> int:
    """Index of the first of the last ``tail_lines`` stored lines (the kubelet counts CRI lines)."""
    if tail_lines is None:
        return 0
    return max(len(lines) - tail_lines, 0)


# -- the request --------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogOptions:
    """``v1.PodLogOptions`` as the kubelet decodes them from the query string."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since: str | None = None
    """Fixed-width RFC3339Nano: entries older than this are left out."""
    streams: tuple[str, ...] = (STDOUT, STDERR)


def _first(query: Mapping[str, Sequence[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _bool(query: Mapping[str, Sequence[str]], key: str) -> bool:
    # apimachinery's Convert_Slice_string_To_bool: only "0" and "false" (any case) are false.
    value = _first(query, key)
    return value is not None and value != "0" and value.lower() != "false"


def _int(query: Mapping[str, Sequence[str]], key: str) -> int | None:
    value = _first(query, key)
    if value is None:
        return None
    try:
        return int(value, 10)
    except ValueError:
        message = f"unable to decode query: {key}={value!r} is not an integer"
        raise LogRequestError(400, message) from None


def parse_options(query: Mapping[str, Sequence[str]], *, now_ns: int) -> LogOptions:
    """Decode and validate a ``/containerLogs`` query as the kubelet does.

    Undecodable values are 400 and invalid ones 422, the kubelet's two codes; the messages name
    the parameter, where the kubelet only says "Unable to decode query." / "Invalid request.".
    """
    query = dict(query)
    tail = _first(query, "tail")  # the kubelet's backwards-compatible alias of tailLines
    if tail:
        query.pop("tailLines", None)
        if tail != "all":
            query["tailLines"] = [tail]
    tail_lines = _int(query, "tailLines")
    limit_bytes = _int(query, "limitBytes")
    since_seconds = _int(query, "sinceSeconds")
    since_time = _first(query, "sinceTime")
    since_ns: int | None = None
    if since_time is not None:
        try:
            since_ns = parse_timestamp(since_time)
        except ValueError:
            message = f"unable to decode query: sinceTime={since_time!r} is not RFC3339"
            raise LogRequestError(400, message) from None
    stream = _first(query, "stream")
    problems = []
    if tail_lines is not None and tail_lines < 0:
        problems.append(f"tailLines: must be greater than or equal to 0 (got {tail_lines})")
    if limit_bytes is not None and limit_bytes < 1:
        problems.append(f"limitBytes: must be greater than 0 (got {limit_bytes})")
    if since_seconds is not None and since_time is not None:
        problems.append("at most one of `sinceTime` or `sinceSeconds` may be specified")
    elif since_seconds is not None and since_seconds < 1:
        problems.append(f"sinceSeconds: must be greater than 0 (got {since_seconds})")
    if stream is not None and stream not in STREAMS:
        problems.append(f"stream: must be one of {', '.join(STREAMS)} (got {stream!r})")
    elif stream not in (None, "All") and tail_lines is not None:
        problems.append("`tailLines` and specific `stream` are mutually exclusive for now")
    if problems:
        raise LogRequestError(422, "invalid request: " + "; ".join(problems))
    if since_seconds is not None:
        since_ns = now_ns - since_seconds * 1_000_000_000
    return LogOptions(
        follow=_bool(query, "follow"),
        previous=_bool(query, "previous"),
        timestamps=_bool(query, "timestamps"),
        tail_lines=tail_lines,
        limit_bytes=limit_bytes,
        since=None if since_ns is None else format_timestamp(since_ns),
        streams=STREAMS[stream or "All"],
    )


# -- the answer ---------------------------------------------------------------------------------
class LogWriter:
    """Turns stored entries into response bytes: since, stream, timestamps, limitBytes.

    Stateful across calls because a follow request renders the log in pieces: the byte budget
    and whether the last message ended its line carry over from one piece to the next.
    """

    def __init__(self, options: LogOptions) -> None:
        self.options = options
        self.remaining = options.limit_bytes
        self._at_line_start = True

    @property
    def exhausted(self) -> bool:
        """True once ``limitBytes`` have been written: the answer is complete."""
        return self.remaining is not None and self.remaining <= 0

    def render(self, entries: Iterable[Entry]) -> Iterator[bytes]:
        for entry in entries:
            if self.exhausted:
                return
            data = self._one(entry)
            if data:
                yield data

    def _one(self, entry: Entry) -> bytes:
        # The kubelet tracks line starts over every entry it reads, shown or not.
        prefix = self.options.timestamps and self._at_line_start
        self._at_line_start = not entry.partial
        since = self.options.since
        if since is not None and entry.timestamp < since:
            return b""
        if entry.stream not in self.options.streams:
            return b""
        data = entry.message
        if prefix:
            data = entry.timestamp.encode() + b" " + data
        if self.remaining is not None:
            data = data[: self.remaining]
            self.remaining -= len(data)
        return data
