"""What the progress endpoint can be told, with the defaults a cluster runs with (pure).

The process's flags map onto these fields one to one; the defaults are the contract's numbers,
so a build without flags serves what the reporting library in ``sdk/mxjob_progress`` expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shared import progress

AUDIENCE: Final = progress.AUDIENCE
"""The audience of the projected ServiceAccount token a pod reports with. A token for this
audience is no credential for the API server (its audience is another), so a leaked one can
only report progress."""
DEFAULT_PORT: Final = progress.PORT
"""Beside ``/metrics`` (8443): the controller's second HTTPS port."""


@dataclass(frozen=True, kw_only=True)
class ProgressSettings:
    """How the progress endpoint serves, authenticates and writes."""

    enabled: bool = True
    """Serve the endpoint. Off, nothing listens and pods' reports fail to connect, which the
    reporting library shrugs off."""
    host: str = "0.0.0.0"
    """The address to listen on (all interfaces by default)."""
    port: int = DEFAULT_PORT
    """The HTTPS port (0: any free port, for tests)."""
    write_interval: float = 5.0
    """Seconds between two status writes of one job: reports coming faster are coalesced, the
    latest one wins. A job's first report is written at once."""
    token_cache_seconds: float = 60.0
    """How long a TokenReview's answer is reused, never past the token's own expiry; a pod
    reporting every few seconds costs one review a minute."""
    token_cache_size: int = 4096
    """Distinct tokens remembered (one per pod reporting); more only cost more reviews."""
    max_body_bytes: int = 64 * 1024
    """The largest body read; a larger one is answered 413 without being read."""
    audience: str = AUDIENCE
    """The audience a token must have been issued for."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"progress port must be 0 to 65535, got {self.port}")
        if self.write_interval <= 0:
            raise ValueError(f"progress write interval must be > 0, got {self.write_interval}")
        if self.token_cache_seconds < 0 or self.token_cache_size < 1:
            raise ValueError("progress token cache needs seconds >= 0 and a size >= 1")
        if self.max_body_bytes < 1024:
            raise ValueError(f"progress max body must be >= 1024 bytes, got {self.max_body_bytes}")
        if not self.audience:
            raise ValueError("progress audience must not be empty")
