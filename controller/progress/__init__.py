"""Progress reporting: training pods push their progress, the controller shows it in
``status.trainerStatus``.

A pod of an MXJob posts ``{"trainerStatus": {...}}`` to
``/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}/status`` on the controller's own
HTTPS port, with a projected ServiceAccount token for the audience ``mxjob.kubeflow.org``; the
controller checks who sent it, keeps the latest report of each job and writes it to the job's
status subresource at most once per interval. The design is Kubeflow Trainer's for TrainJobs
(push, not scrape: training code opts in with a few lines and the control plane needs nothing
per job), carried over to MXJob.

Every replica serves it, the leader and the standbys alike: a report is a status write of its
own, never a reconcile, so it needs no lease, and a standby serving half the reports halves the
leader's load. The room, pure modules first:

- ``settings.py``: what can be tuned (:class:`~controller.progress.settings.ProgressSettings`).
- ``report.py``: a request body → the report, or the message naming the field that is wrong.
- ``tokens.py``: a bearer token's own expiry, and what a TokenReview says of it.
- ``authorization.py``: whether the pod a token names may report for the job in the URL.
- ``coalescer.py``: which job's latest report is due to be written now.
- ``wire.py``: routes, framing and the Status bodies of the answers.
- ``counters.py``: the counts the manager may export as metrics.
- ``reviews.py``: TokenReviews sent through the controller's client, cached by token hash.
- ``service.py``: one request → one answer, the steps above in order.
- ``flusher.py``: the thread that writes the due reports.
- ``server.py``: the HTTPS server.
- ``endpoint.py``: :func:`~controller.progress.endpoint.progress_endpoint`, all of it built.
"""
