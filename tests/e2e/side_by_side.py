"""The cases of one real-node test, run side by side under ``make test`` and one at a time
when their figures are measured (``make bench-recovery``).

The real-node tests are make test's critical path (CONTRIBUTING.md, "How long make test
takes"), and a recovery case's job leaves the node's two cores idle much of its time: pods made
and started, a restart's wait, the pauses between epochs, a tracker's session timeout. Cases that
share no pod, name or volume run together in about the time of the longest, each job fitted to
its share of the node before any of them is created. Their figures, timings above all, are
measured one case at a time, each job with the node to itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from fractions import Fraction

from tests.helpers.figures import Figures

Case = tuple[str, Callable[[], None]]
"""A case's name (for a failure's note) and what runs it."""


def share_of(figures: Figures, *, cases: int) -> Fraction:
    """Each case's share of the node: all of it when figures are measured, else its part."""
    return Fraction(1) if figures.measured else Fraction(1, cases)


def run_cases(figures: Figures, cases: Sequence[Case]) -> None:
    """Run ``cases``, side by side unless figures are measured; every case runs to its end,
    and each failure is raised with the name of its case."""
    if figures.measured:
        for _, run in cases:
            run()
        return
    pool = ThreadPoolExecutor(max_workers=len(cases), thread_name_prefix="case")
    try:
        futures = [(name, pool.submit(run)) for name, run in cases]
        wait([future for _, future in futures])
    finally:  # a test's timeout leaves the others to their own waits' timeouts
        pool.shutdown(wait=False, cancel_futures=True)
    failures: list[BaseException] = []
    for name, future in futures:
        if (error := future.exception()) is not None:
            error.add_note(f"in the case {name!r}, run side by side with {len(cases) - 1} others")
            failures.append(error)
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise BaseExceptionGroup(f"{len(failures)} of {len(cases)} cases failed", failures)
