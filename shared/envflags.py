"""Boolean environment variables, read by one rule in both processes.

A switch in the environment (``MXJOB_CONTROLLER_LEADER_ELECT``, ``MXJOB_WEBHOOK_METRICS_SECURE``…)
is what whoever installed the operator chose. A value that is neither true nor false (a typo,
``ture``, or a word such as ``enabled``) is refused with the variable's name and the words
allowed, never read as false: read as false, ``MXJOB_WEBHOOK_METRICS_SECURE=ture`` would turn
the scrapers' authentication off without a word, and ``MXJOB_CONTROLLER_LEADER_ELECT=enabled``
would let two replicas reconcile the same jobs. The words are those of the processes' flags and
of the manifests (``true``/``false``), and the other spellings environments commonly carry.
"""

from __future__ import annotations

from typing import Final

TRUE_WORDS: Final = ("1", "true", "yes", "on")
FALSE_WORDS: Final = ("0", "false", "no", "off")


class NotABooleanError(ValueError):
    """An environment variable that should be on or off holds something else."""


def parse_env_flag(raw: str, *, variable: str) -> bool:
    """``raw``, the value of ``variable``, as a boolean: one of :data:`TRUE_WORDS` or
    :data:`FALSE_WORDS`, in any case, around whitespace. Anything else raises
    :class:`NotABooleanError` naming ``variable`` and the words allowed; each process turns it
    into its own refusal at start."""
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise NotABooleanError(
        f"{variable}={raw!r} is not a boolean: use one of {', '.join(TRUE_WORDS)} (on) "
        f"or {', '.join(FALSE_WORDS)} (off)"
    )
