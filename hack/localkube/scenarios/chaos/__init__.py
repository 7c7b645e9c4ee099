"""The chaos run (``make chaos``): many MXJobs to completion while the operator's world breaks.

Why a separate run and not only unit tests: the promises "loses no job, never duplicates a pod,
never goes backwards" are about processes dying at arbitrary moments and watches ending in 410,
which only real processes on a real API server show. This module starts its own control plane
(so it can restart kube-apiserver and etcd without disturbing anyone), the webhook with two
gunicorn workers, one controller, and the test kubelet in manual mode. A driver scripts every
job's pods (succeed; a retryable exit 137 then succeed; fail with exit 1) at random moments,
while a fault loop, also at random moments, SIGKILLs and restarts the controller, SIGKILLs one of
the webhook's two worker processes, restarts kube-apiserver and etcd (same data), and compacts
etcd so that re-opened watches get 410 Gone.

What is checked (see ``docs/explanation/recovery.md`` for what each invariant means):

- every job reached the terminal state its script intended, with the restarts it intended;
- pods: the API server's audit log (complete, unlike any watch) shows exactly the pod creations
  the scripts call for, one per replica slot plus one per retryable failure; and each
  replacement was created only after the watch saw its predecessor Failed;
- no job's ``restartCount`` and no pod's container ``restartCount`` ever went down;
- no job left a terminal state once it reached one;
- after each fault the operator accepted and started a new MXJob (a probe, through the admission
  webhooks) within 10 s of the fault's start.

``python -m localkube.scenarios.chaos`` runs the full version and writes its figures into
``docs/explanation/recovery.md``; ``tests/e2e/test_reliability_chaos.py`` runs a short one.

The modules, each one job: :mod:`.plan` (the run's size, the jobs and their scripts),
:mod:`.watch` (what the watches saw), :mod:`.jobs` (creating the jobs and playing their
scripts), :mod:`.supervisor` (the controller process), :mod:`.faults` (the fault loop),
:mod:`.checks` (the invariants), :mod:`.report` (the figures as markdown), :mod:`.run` (all of it
on its own control plane) and :mod:`.__main__` (the command line).
"""
