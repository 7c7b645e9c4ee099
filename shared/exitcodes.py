"""What the exit code of an `mxnet` container means for the job (seed 000's table).

The controller recreates a pod with restartPolicy ExitCode only for a *retryable* exit: a
signal from outside (Control-C, SIGKILL, SIGTERM, preemption) says nothing about the program,
so running it again may succeed. An exit the program chose (1-128) or a crash (SIGSEGV, 139)
would happen again, so it fails the job.
"""

from __future__ import annotations

from enum import StrEnum


class ExitClass(StrEnum):
    SUCCEEDED = "Succeeded"
    PERMANENT = "Permanent"
    RETRYABLE = "Retryable"


SIGNAL_EXIT_BASE = 128
SIGSEGV_EXIT = 139

# Linux signal numbers: containers run on Linux whatever the controller's platform.
_SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}

_DESCRIPTIONS: dict[int, str] = {
    0: "success",
    1: "general error",
    2: "misuse of shell builtins",
    126: "command invoked cannot execute",
    127: "command not found",
    128: "invalid argument to exit",
    130: "SIGINT (Control-C)",
    137: "SIGKILL",
    138: "SIGUSR1 (user-specified retryable error)",
    139: "SIGSEGV (invalid memory reference)",
    143: "SIGTERM",
}


def classify_exit(exit_code: int | None) -> ExitClass:
    """Succeeded, permanent or retryable.

    0 succeeds; every code up to 128 (including negative ones, which no runtime should report)
    and 139 (SIGSEGV) are permanent; other signal exits (129+) and None (no exit code: the pod
    was evicted or preempted) are retryable.
    """
    if exit_code is None:
        return ExitClass.RETRYABLE
    if exit_code == 0:
        return ExitClass.SUCCEEDED
    if exit_code <= SIGNAL_EXIT_BASE or exit_code == SIGSEGV_EXIT:
        return ExitClass.PERMANENT
    return ExitClass.RETRYABLE


def describe_exit(exit_code: int | None) -> str:
    """Human text for an exit code, for events and condition messages."""
    if exit_code is None:
        return "no exit code (pod evicted or preempted)"
    known = _DESCRIPTIONS.get(exit_code)
    if known is not None:
        return known
    if exit_code < 0:
        return "invalid exit code"
    signal = _SIGNALS.get(exit_code - SIGNAL_EXIT_BASE)
    if signal is not None:
        return signal
    if exit_code < SIGNAL_EXIT_BASE:
        return "application error"
    return "unknown exit code"
