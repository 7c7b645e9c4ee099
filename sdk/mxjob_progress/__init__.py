"""Report an MXJob's progress to the mxjob-operator, which shows it in ``status.trainerStatus``.

Training code calls :meth:`ProgressReporter.report` as often as it likes; a background thread
sends the latest state to the operator now and then. The reporter never blocks and never raises
into training: a job whose operator is unreachable trains exactly as one without a reporter.

The wire contract (the operator's status endpoint is built to it)
==================================================================

Environment. The operator's admission webhook sets three variables in every container of every
replica; :meth:`ProgressReporter.from_env` reads them and gives a disabled, do-nothing reporter
when any is missing (a job run without the operator, or with the injection turned off):

``MXJOB_STATUS_URL``
    The full ``https`` URL to post to, ending in
    ``/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}/status``. Any other scheme is
    refused: the request carries a credential.
``MXJOB_STATUS_CA_CERT``
    The path of a PEM file of the CA certificates that verify the endpoint's serving certificate
    (its name must match the URL's host). The file is read again whenever it changes, so a
    rotated CA is picked up without a restart.
``MXJOB_STATUS_TOKEN``
    The path of a projected ServiceAccount token. The kubelet rotates it, so it is read again at
    every request, never cached.

Request. ``POST`` to the URL with the headers ``Authorization: Bearer <token>`` (the file's
content, surrounding whitespace stripped), ``Content-Type: application/json`` and
``User-Agent: mxjob-progress/<version>``, and the UTF-8 JSON body::

    {"trainerStatus": {
        "progressPercentage": 42,
        "estimatedRemainingSeconds": 1800,
        "metrics": [{"name": "loss", "value": "0.2347"}, {"name": "accuracy", "value": "0.91"}]
    }}

Every field of ``trainerStatus`` is optional and left out while unknown (``{"trainerStatus":
{}}`` is a heartbeat). ``progressPercentage`` is an integer from 0 to 100 (the fraction done,
rounded down, so 100 means finished); ``estimatedRemainingSeconds`` an integer from 0 to
2147483647; ``metrics`` at most 32 entries (:data:`MAX_METRICS`), each name a string of 1 to 63
characters (:data:`MAX_NAME`) and each value a string of at most 256 characters
(:data:`MAX_VALUE`). Each body is the reporter's whole current state: the latest progress and
estimate, and the latest value of every metric reported so far, in the order first reported, so
the server may replace ``status.trainerStatus`` with it wholesale and stamp ``lastUpdatedTime``
itself (the client never sends one). A body stays within 64 KiB.

Responses.

- 2xx: accepted.
- 400, 401, 403, 404, 413 and any other 4xx but 408 and 429: this report will never be accepted.
  It is dropped and logged once (per status code, at WARNING, on the logger ``mxjob_progress``);
  later reports are sent as usual. So are 1xx and 3xx (redirects are not followed).
- 408, 429, 5xx, a connection error, a TLS failure, a timeout, or a CA or token file that
  cannot be read (yet): the server may take it later. The reporter backs off exponentially
  (1 s, doubling up to 60 s, by default), never sooner than a ``Retry-After`` in seconds says
  (capped at the same maximum; the HTTP-date form is ignored), then sends its latest state.

At most one request is in flight; a request times out after 2 s (per socket operation) by
default; a request starts at least 5 s after the previous one by default, whatever the answers,
but for the last: :meth:`ProgressReporter.close` (also run at interpreter exit) sends the final
state at once if it was not accepted yet, once, waiting a bounded time (5 s by default). Each
replica that reports has a reporter of its own, so the server hears from each of them; a job
reports from one replica with ``from_env(enabled=rank == 0)``.

Framework helpers: :mod:`mxjob_progress.mxnet` (``Module.fit`` callbacks),
:mod:`mxjob_progress.gluon` (Gluon loops) and :mod:`mxjob_progress.tvm` (a MetaSchedule measure
callback). None imports its framework before it is used.
"""

from __future__ import annotations

from mxjob_progress._payload import MAX_METRICS, MAX_NAME, MAX_VALUE
from mxjob_progress.eta import EtaEstimator
from mxjob_progress.reporter import (
    ENV_CA_CERT,
    ENV_TOKEN,
    ENV_URL,
    Endpoint,
    ProgressReporter,
    ReporterSettings,
)

__version__ = "0.1.0"

__all__ = [
    "ENV_CA_CERT",
    "ENV_TOKEN",
    "ENV_URL",
    "MAX_METRICS",
    "MAX_NAME",
    "MAX_VALUE",
    "Endpoint",
    "EtaEstimator",
    "ProgressReporter",
    "ReporterSettings",
    "__version__",
]
