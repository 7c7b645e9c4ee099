"""Wires the controller together: informers → work queue → workers → reconcile, under election.

Start-up order matters. Informers start first (also on a standby, so that a new leader has a
warm cache and fails over in a retry period, not a relist); workers start only once every
informer has synced and this process leads, because a reconcile against a half-filled pod cache
would create pods that already exist. Informer events only queue job keys; the queue dedups
them, so a burst of pod updates costs one reconcile per job.

The informers are the jobs', their pods' and Services', and those the integrations declare
(controller/job/declaration.py): the integrations are chosen from the flags, the gang scheduler
resolved first (controller/integrations/chosen.py), and their informers built, routed to the
queue and bound to them the same way for each (controller/integrations/registration.py); nothing
here knows one integration from another. Being built asks the API server (the gang scheduler,
which optional resources it serves), so the controller is built once it answers
(controller/main.py).

Every replica, the leader and the standbys alike, serves the progress endpoint beside its
probes and ``/metrics`` (controller/progress/: a job's pods post their progress, and it is
written to the job's status): a report needs the pods' and jobs' caches, which a standby keeps
warm too, and no lease. Its certificate is the metrics server's pair, with a self-signed
fallback of its own that names the progress Service (controller/runtime/serving_tls.py); the CA
it chains to is what the status-CA integration hands the jobs' pods
(controller/integrations/statusca/).

Stopping (SIGTERM) is the reverse: the queue stops handing out keys, in-flight reconciles
finish (bounded by ``shutdown_timeout``), the Lease is released so a standby takes over at
once, then watches and the event writer stop.
"""

from __future__ import annotations

import datetime
import functools
import logging
import threading
import time
from typing import Any

from controller.certificates.bundle_publisher import CABundlePublisher
from controller.certificates.keeper import CertificateTargets, WebhookCertificateKeeper
from controller.integrations.chosen import chosen_integrations
from controller.integrations.registration import register
from controller.job.job_writes import MXJobWrites
from controller.job.reconciler import Reconciler, job_key
from controller.job.tally import job_gauges
from controller.progress.endpoint import ProgressEndpoint
from controller.progress.flusher import WRITE_TIMEOUT
from controller.progress.process import progress_serving
from controller.runtime.client import Conflict, KubeClient, mxjobs_path, pods_path, services_path
from controller.runtime.election import ElectionSettings, LeaderElector
from controller.runtime.endpoints import http_endpoints
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations, Kind
from controller.runtime.failpoints import Failpoints
from controller.runtime.health import HttpEndpoints, probe_route
from controller.runtime.informers import DELETED, Informer, InformerSettings, object_key, slim_pod
from controller.runtime.metrics import Metrics
from controller.runtime.settings import ControllerSettings
from controller.runtime.workqueue import WorkQueue
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME, WATCHED_OPERATOR_NAMES

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _job_informers(
    client: KubeClient, *, namespaces: tuple[str, ...] | None, settings: InformerSettings
) -> tuple[Informer, Informer, Informer]:
    """The MXJobs', and their pods' and Services' informers (indexed by job name)."""
    # Ours, and training-operator's: its pods of a job taken over are adopted, not doubled.
    selector = f"{LABEL_OPERATOR_NAME} in ({','.join(WATCHED_OPERATOR_NAMES)})"
    jobs = Informer(
        client, name="mxjobs", path_for=mxjobs_path, namespaces=namespaces, settings=settings
    )
    pods = Informer(
        client,
        name="pods",
        path_for=pods_path,
        namespaces=namespaces,
        label_selector=selector,
        index_label=LABEL_JOB_NAME,
        transform=slim_pod,
        settings=settings,
    )
    services = Informer(
        client,
        name="services",
        path_for=services_path,
        namespaces=namespaces,
        label_selector=selector,
        index_label=LABEL_JOB_NAME,
        settings=settings,
    )
    return jobs, pods, services


class Controller:
    """One controller process's moving parts."""

    def __init__(
        self,
        settings: ControllerSettings,
        client: KubeClient | None = None,
        *,
        stop_event: threading.Event | None = None,
    ) -> None:
        """Build everything, asking the API server what the integrations need to know (the gang
        scheduler ``auto`` picks; which optional resources are served): build it once the API
        server answers (controller/main.py). ``stop_event``: the process's, already watched by
        its signal handlers."""
        self.settings = settings
        self.client = client or KubeClient.load(settings.kubeconfig, pool_size=settings.pool_size)
        self.metrics = Metrics()
        # The client counts every write it sends (mxjob_controller_api_writes_total).
        self.client.count_writes_with(self.metrics.count_api_write)
        self.queue = WorkQueue(metrics=self.metrics)
        self.metrics.track_queue(self.queue)
        self.expectations = Expectations(timeout=settings.expectations_timeout)
        self.recorder = EventRecorder(
            self.client,
            warnings_only=settings.events == "warnings",
            on_drop=self.metrics.event_dropped,
        )
        namespaces = settings.namespaces or None
        informer_settings = InformerSettings(watch_timeout=settings.watch_timeout)
        self.jobs, self.pods, self.services = _job_informers(
            self.client, namespaces=namespaces, settings=informer_settings
        )
        self.metrics.track_jobs(self.jobs.store.objects, read=job_gauges)
        self.progress_serving = progress_serving(settings)
        self.progress: ProgressEndpoint | None = None
        job_writes = self.job_writes = MXJobWrites(self.client, jobs=self.jobs.store)
        integrations = chosen_integrations(
            settings,
            self.client,
            job_writes=job_writes,
            recorder=self.recorder,
            metrics=self.metrics,
            now=_utc_now,
            status_ca=None if self.progress_serving is None else self.progress_serving.ca,
        )
        # What each integration declares it watches: informers like the job's own, their
        # events queueing the jobs their objects map back to, their stores bound to it.
        self.watched = register(
            integrations,
            client=self.client,
            namespaces=namespaces,
            settings=informer_settings,
            queue=self.queue.add,
            jobs=self.jobs.store,
        )
        self.reconciler = Reconciler(
            self.client,
            jobs=self.jobs.store,
            pods=self.pods.store,
            services=self.services.store,
            expectations=self.expectations,
            recorder=self.recorder,
            metrics=self.metrics,
            integrations=integrations,
            now=_utc_now,
            pod_start_timeout=settings.pod_start_timeout,
            failpoints=Failpoints.from_env(),
            job_writes=job_writes,
        )
        names = ", ".join(i.name for i in integrations)
        log.info("integrations, in the order a reconcile calls them: %s", names)
        self.jobs.add_handler(self._on_job)
        self.pods.add_handler(self._owned_handler("pods"))
        self.services.add_handler(self._owned_handler("services"))
        elect = settings.leader_elect
        self.elector = LeaderElector(self.client, ElectionSettings.of(settings)) if elect else None
        self.certificates = self._certificate_keeper()
        self.bundle_publisher = self._bundle_publisher()
        self.stop_event = stop_event or threading.Event()
        self.lost_lease = False
        self._workers: list[threading.Thread] = []
        self._servers: list[HttpEndpoints] = []
        self._started = time.monotonic()

    @property
    def namespace(self) -> str:
        """The operator's own namespace: its Secret's, Services' and Lease's."""
        return self.settings.certificate_namespace or self.settings.lease_namespace

    def _certificate_keeper(self) -> WebhookCertificateKeeper | None:
        settings = self.settings
        if not settings.manage_webhook_certificates:
            return None
        return WebhookCertificateKeeper(
            self.client,
            targets=CertificateTargets(namespace=self.namespace),
            recorder=self.recorder,
            check_interval=settings.certificate_check_interval,
        )

    def _bundle_publisher(self) -> CABundlePublisher | None:
        settings = self.settings
        if not settings.ca_bundle_configmap:
            return None
        return CABundlePublisher(
            self.client,
            namespace=self.namespace,
            configmap=settings.ca_bundle_configmap,
            check_interval=settings.certificate_check_interval,
        )

    # -- informer handlers --------------------------------------------------------------------
    def _on_job(self, event_type: str, job: Obj, old: Obj | None) -> None:
        key = object_key(job)
        if event_type == DELETED:
            self.reconciler.job_deleted(key, uid=str(_meta(job).get("uid") or ""))
            namespace = str(_meta(job).get("namespace") or "")
            self.metrics.job_counter_inc(self.metrics.jobs_deleted, namespace)
        # Also when deleted: the reconcile of a job the cache no longer has lets its pods go
        # (controller/job/tracking.py), even if their last events came before this one.
        self.queue.add(key)

    @property
    def informers(self) -> list[Informer]:
        return [self.jobs, self.pods, self.services, *self.watched]

    def _owned_handler(self, kind: Kind) -> Any:
        def handle(event_type: str, obj: Obj, old: Obj | None) -> None:
            meta = _meta(obj)
            job_name = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
            if not isinstance(job_name, str):
                return
            key = job_key(str(meta.get("namespace")), job_name)
            uid = str(meta.get("uid", ""))
            if event_type == DELETED or meta.get("deletionTimestamp"):
                self.expectations.deletion_observed(key, kind, uid)
            if old is None and event_type != DELETED:
                self.expectations.creation_observed(key, kind, str(meta.get("name", "")))
            self.queue.add(key)

        return handle

    # -- health ---------------------------------------------------------------------------------
    def synced(self) -> bool:
        return all(i.has_synced() for i in self.informers)

    def _ready(self) -> tuple[bool, str]:
        if self.stop_event.is_set():
            return False, "shutting down"
        if not self.synced():
            return False, "informers not synced"
        return True, ""

    def _healthy(self) -> tuple[bool, str]:
        if not all(i.alive() for i in self.informers):
            return False, "an informer thread died"
        workers_dead = self._workers and not all(w.is_alive() for w in self._workers)
        if workers_dead and not self.stop_event.is_set():
            return False, "a worker thread died"
        return True, ""

    def _start_servers(self) -> None:
        probes = {"/healthz": probe_route(self._healthy), "/readyz": probe_route(self._ready)}
        self._servers = http_endpoints(
            self.settings, client=self.client, probes=probes, exposition=self.metrics.exposition
        )
        for server in self._servers:
            server.start()
        if self.progress_serving is not None:
            self.progress = self.progress_serving.endpoint(
                client=self.client,
                pods=self.pods.store,
                jobs=self.jobs.store,
                synced=lambda: self.jobs.has_synced() and self.pods.has_synced(),
                write=functools.partial(self.job_writes.trainer_status, timeout=WRITE_TIMEOUT),
            )
            self.metrics.track_progress(self.progress.counts)
            self.progress.start()

    # -- workers --------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            started = time.perf_counter()
            result = "success"
            try:
                requeue_after = self.reconciler.reconcile(key)
                self.queue.forget(key)
                if requeue_after is not None:
                    result = "requeue_after"
                    self.queue.add_after(key, requeue_after)
            except Conflict:
                # A newer version of the job exists; the informer brings it shortly.
                result = "error"
                self.queue.add_rate_limited(key)
            except Exception as error:
                result = "error"
                delay = self.queue.add_rate_limited(key)
                namespace, _, name = key.partition("/")
                log.warning(
                    "reconcile failed: %s",
                    error,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                    extra={"fields": {"namespace": namespace, "name": name, "retry_in": delay}},
                )
            finally:
                self.queue.done(key)
                self.metrics.reconciled(result=result, seconds=time.perf_counter() - started)

    def _resync(self) -> None:
        """Re-queue every cached job now and then: a missed event cannot strand a job."""
        while not self.stop_event.wait(self.settings.resync_period):
            for key in self.jobs.store.all_keys():
                self.queue.add(key)

    def start_workers(self) -> None:
        """Begin reconciling (once synced): called directly, or when this process leads.

        The webhook's certificates come first and need no cache: on a fresh install the
        webhook pods wait for their Secret."""
        if self.certificates is not None:
            self.certificates.start(self.stop_event)
        if self.bundle_publisher is not None:
            self.bundle_publisher.start(self.stop_event)
        while not self.synced() and not self.stop_event.is_set():
            self.stop_event.wait(0.05)
        self.metrics.set_leading(True)
        for key in self.jobs.store.all_keys():
            self.queue.add(key)
        for number in range(self.settings.workers):
            worker = threading.Thread(target=self._work, name=f"worker-{number}", daemon=True)
            worker.start()
            self._workers.append(worker)
        threading.Thread(target=self._resync, name="resync", daemon=True).start()
        log.info("reconciling with %d workers", self.settings.workers)

    def _lost(self) -> None:
        self.lost_lease = True
        self.metrics.set_leading(False)
        self.stop_event.set()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Start informers, the event writer and the HTTP endpoints (not the workers)."""
        self._start_servers()
        self.recorder.start()
        for informer in self.informers:
            informer.start()

    def run(self) -> int:
        """Run until :meth:`stop` (or a lost Lease); return the process exit code."""
        self.start()
        if self.elector is not None:
            self.elector.run(
                on_started_leading=self.start_workers,
                on_stopped_leading=self._lost,
                stop=self.stop_event,
            )
        else:
            self.start_workers()
        self.stop_event.wait()
        self.shutdown()
        return 1 if self.lost_lease else 0

    def stop(self) -> None:
        """Ask :meth:`run` to return (as controller/main.py's signal handlers do, setting the
        ``stop_event`` it was built with)."""
        self.stop_event.set()

    def shutdown(self) -> None:
        """Finish in-flight reconciles, release the Lease, stop watching."""
        self.stop_event.set()
        self.queue.shutdown()
        deadline = time.monotonic() + self.settings.shutdown_timeout
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        if self.elector is not None and not self.lost_lease:
            self.elector.release()
        self.metrics.set_leading(False)
        for informer in self.informers:
            informer.stop()
        self.recorder.stop(timeout=2.0)
        for server in self._servers:
            server.stop()
        if self.progress is not None:
            self.progress.stop()
        log.info("stopped")
