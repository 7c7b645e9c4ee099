"""One request to the status endpoint, and what its answer means for the report it carried.

``http.client`` rather than ``urllib.request``: the endpoint is inside the cluster, and
``urllib`` would send the request (and its token) through whatever ``HTTPS_PROXY`` the image
sets, and follow redirects, which the contract does not have.
"""

from __future__ import annotations

import http.client
import math
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from mxjob_progress._version import __version__

ACCEPTED = "accepted"
"""The server took the report."""
REJECTED = "rejected"
"""The server will never take this report (most 4xx): drop it, and send the next one."""
RETRY = "retry"
"""The server may take it later (408, 429, 5xx, no answer): back off and send the latest."""


@dataclass(frozen=True)
class Outcome:
    """How one request ended."""

    kind: str
    """:data:`ACCEPTED`, :data:`REJECTED` or :data:`RETRY`."""
    key: str
    """What kind of failure, to log each kind once: a status code, or an exception's class."""
    detail: str = ""
    """What to tell the user about it."""
    retry_after: float | None = None
    """Seconds the server asked to wait (``Retry-After``), if it did."""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds; None for none, or for the HTTP-date form (the
    operator sends seconds), so that plain exponential backoff applies."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def classify(status: int, retry_after: str | None, text: str) -> Outcome:
    """What an HTTP status means for the report, per the contract (the package's docstring)."""
    detail = f"HTTP {status}" + (f": {text}" if text else "")
    if 200 <= status < 300:
        return Outcome(ACCEPTED, str(status))
    if status in (408, 429) or status >= 500:
        return Outcome(RETRY, str(status), detail, retry_after_seconds(retry_after))
    return Outcome(REJECTED, str(status), detail)


class Transport:
    """Posts bodies to one endpoint, reading the CA file and the token as the contract says."""

    def __init__(self, url: str, ca_cert: str, token_file: str, *, timeout: float) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or ""
        self._port = parts.port or 443
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._ca_cert = Path(ca_cert)
        self._token_file = Path(token_file)
        self._timeout = timeout
        self._pem: bytes | None = None
        self._context: ssl.SSLContext | None = None

    def _ssl_context(self) -> ssl.SSLContext:
        """A context trusting the CA file's certificates, rebuilt when the file changes (the
        operator's CA rotates; the mounted file is replaced in place)."""
        pem = self._ca_cert.read_bytes()
        if self._context is None or pem != self._pem:
            self._context = ssl.create_default_context(cadata=pem.decode("ascii", "replace"))
            self._pem = pem
        return self._context

    def _token(self) -> str:
        """The token as of now: the kubelet rotates the file, so it is never cached."""
        token = self._token_file.read_text(encoding="utf-8").strip()
        if not token:
            raise ValueError(f"the token file {self._token_file} is empty")
        return token

    def post(self, body: bytes) -> Outcome:
        """Send ``body``; never raises (an unexpected error is an outcome to retry)."""
        try:
            context = self._ssl_context()
        except (OSError, ValueError) as error:
            return Outcome(RETRY, "ca-cert", f"cannot use the CA file {self._ca_cert}: {error}")
        try:
            token = self._token()
        except (OSError, ValueError) as error:
            return Outcome(RETRY, "token", f"cannot read the token: {error}")
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": f"mxjob-progress/{__version__}",
        }
        connection = http.client.HTTPSConnection(
            self._host, self._port, timeout=self._timeout, context=context
        )
        try:
            connection.request("POST", self._target, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read(300).decode("utf-8", "replace").strip()
            return classify(response.status, response.getheader("Retry-After"), text)
        except Exception as error:  # OSError (TLS, refused, timeout), HTTPException, bad header
            name = type(error).__name__
            return Outcome(RETRY, name, f"{name}: {error}" if str(error) else name)
        finally:
            connection.close()
