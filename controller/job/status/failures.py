"""How a replica's failed pod counts, and how the status and its Events name it.

Under ``Never`` every failure is permanent. Under ``ExitCode`` the exit code's class decides
(shared.exitcodes), and an end the runtime lost is retried whatever its code; under
``OnFailure``/``Always`` the kubelet restarts in place, so a Failed pod was evicted and only a
new pod can run the replica again (docs/reference/job-contract.md).
"""

from __future__ import annotations

from typing import Final, Literal

from controller.job.observed import PodView
from controller.job.view import MXJobView
from shared.constants import RestartPolicy
from shared.defaults import DEFAULT_RESTART_POLICY
from shared.exitcodes import ExitClass, classify_exit, describe_exit

RUNTIME_LOST_REASONS: Final = frozenset({"Unknown", "ContainerStatusUnknown"})
"""A container's terminated reason when the runtime, not the program, decided its end: containerd
reports ``Unknown`` (exit code 255) for a task whose exit it missed while it was down, and the
kubelet ``ContainerStatusUnknown`` (137) for a container it can no longer find. Under
``ExitCode`` such an end is retried, whatever the code."""

FailureKind = Literal["none", "permanent", "retry"]


def _restart_policy(job: MXJobView, view: PodView) -> RestartPolicy:
    """The restart policy of the pod's replica type (the default for a type the job lacks)."""
    replica = job.replica(view.replica_type.value) if view.replica_type else None
    return replica.restart_policy if replica is not None else DEFAULT_RESTART_POLICY


def failure_kind(job: MXJobView, view: PodView) -> FailureKind:
    """How the failure of this pod counts under its replica's restart policy."""
    if not view.failed or view.replica_type is None:
        return "none"
    policy = _restart_policy(job, view)
    if policy is RestartPolicy.NEVER:
        return "permanent"
    if policy is RestartPolicy.EXIT_CODE:
        if view.reason in RUNTIME_LOST_REASONS:
            return "retry"  # the runtime lost the process's end: not the program's verdict
        return "retry" if classify_exit(view.exit_code) is ExitClass.RETRYABLE else "permanent"
    # OnFailure/Always: the kubelet restarts failed containers in place, so a Failed pod was
    # evicted (or hit a pod-level limit); only a new pod can run the replica again.
    return "retry"


def why_final(job: MXJobView, view: PodView) -> str:
    """Why this failure ends the job: the replica's restart policy, or the exit code's class."""
    if view.replica_type is not None and _restart_policy(job, view) is RestartPolicy.NEVER:
        return "restartPolicy Never does not retry"
    return "a permanent failure, not retried"


def describe(view: PodView) -> str:
    """``Worker 1 (pod mnist-worker-1)``: the replica as messages name it."""
    rtype = view.replica_type.value if view.replica_type else "replica"
    return f"{rtype} {view.index} (pod {view.name})"


def exit_text(view: PodView) -> str:
    """How the pod ended, in words: its exit code and what it means, or why it has none."""
    if view.exit_code is None:
        why = view.disruption or view.reason or "no exit code"
        return f"failed without an exit code ({why}, e.g. evicted or preempted)"
    # The kubelet's reason says what the code alone cannot: OOMKilled is a 137 the kernel sent.
    noted = f", {view.reason}" if view.reason and view.reason not in ("Error", "Completed") else ""
    noted += f", {view.disruption}" if view.disruption else ""
    return f"exited with code {view.exit_code} ({describe_exit(view.exit_code)}{noted})"
