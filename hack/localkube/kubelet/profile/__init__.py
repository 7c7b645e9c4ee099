"""The test kubelet's install profile: the operator's own images run as their console scripts.

What it is for: ``make install``-style tests deploy the operator from ``manifests/`` (its
webhook and controller Deployments) onto the local control plane, and want those pods to run
for real without the real node's root and half-minute start, so the exec-mode test kubelet
(:class:`localkube.kubelet.core.TestKubelet` with ``ExecSettings.profile``) runs the pods that
kube-controller-manager creates from those Deployments as local processes of the installed
console scripts (``.venv/bin/mxjob-webhook``, ``.venv/bin/mxjob-controller``), the programs the
images' exec-form entrypoints start (``Dockerfile.webhook``, ``Dockerfile.controller``). Pods of
other images (the MXJobs' own) run as plain exec-mode pods. Everything else comes from the pod,
as a container runtime would give it:

- args, env (:mod:`localkube.kubelet.podenv`) and the ``KUBERNETES_SERVICE_HOST``/``PORT`` every
  container gets, pointing at the loopback API server;
- a network of its own: each pod gets an address of its own (:mod:`.podips`, on the loopback
  interface) as its pod IP, and listen addresses on "every interface" in its args
  (``0.0.0.0:P``, ``:P``) are bound to that address, which is what they mean inside a pod's
  network namespace. Two replicas then serve the same port side by side, and the EndpointSlice
  of a Service lists each one's address;
- a filesystem view of its own: the process starts in a private mount namespace (``unshare``)
  where each ``volumeMount`` is a bind mount of a directory the kubelet filled (:mod:`.volumes`),
  read-only where the mount says so (:mod:`.sandbox`). So the program reads its Secret at the
  path in its args and its service-account token at
  ``/var/run/secrets/kubernetes.io/serviceaccount``, unchanged. Mount points that do not exist
  on this machine are created as empty directories (as a runtime does in an image's root
  filesystem) and removed when the kubelet stops. This needs root (or ``CAP_SYS_ADMIN``), which
  the test kubelet has anyway: it edits ``/etc/hosts`` for exec-mode jobs;
- readiness and liveness probes (:mod:`.probes`), driving the Ready condition and restarts, and
  the ``preStop`` hook and grace period when the pod is deleted (:mod:`.pods`).

The modules: :mod:`.entrypoints` (which images, which programs), :mod:`.pods` (preparing one
pod's process and the profile's state on a kubelet), :mod:`.sandbox`, :mod:`.podips`,
:mod:`.volumes`, :mod:`.probes`. Starting, restarting and stopping the processes is exec mode's
(:mod:`localkube.kubelet.execpods`), the same as for any other exec-mode pod.

Not emulated: the image's user (the process runs as the kubelet's user), a read-only root
filesystem, resource limits.
"""
