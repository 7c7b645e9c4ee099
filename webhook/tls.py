"""The webhook's serving certificate: one reloader per file pair and worker process.

What is served, and when a rotated pair is picked up, is certs/reloader.py's (TLS 1.2 as the
floor: certs/serving.py). What is the webhook's own is the sharing: gunicorn calls its
``ssl_context`` hook for each accepted connection (webhook/serve.py) and ``/readyz`` asks whether
a certificate is loaded (webhook/app.py), so ``reloader_for`` memoises one reloader per file pair
and process, and both agree on one loaded certificate and stat the files once per interval
between them. The app is built in each worker after the fork, so each worker has its own.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from certs.reloader import CertificateReloader
from certs.serving import CertificateFiles

_registry_lock = threading.Lock()
_registry: dict[tuple[str, str], CertificateReloader] = {}


def reloader_for(*, cert_file: Path, key_file: Path, check_interval: float) -> CertificateReloader:
    """The process-wide reloader for this file pair (created on first use, with no fallback: the
    API server calls webhooks over verified TLS only, so the webhook presents its pair or none).
    """
    key = (os.path.abspath(cert_file), os.path.abspath(key_file))
    with _registry_lock:
        reloader = _registry.get(key)
        if reloader is None:
            files = CertificateFiles(cert_file=Path(key[0]), key_file=Path(key[1]))
            reloader = CertificateReloader(files=files, check_interval=check_interval)
            _registry[key] = reloader
        return reloader
