"""The per-machine image cache: where it is, one record per image (its inputs' digest, reference
and archive), and a lock so two builds never write it at once."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuiltImage:
    ref: str
    archive: Path
    """A docker-archive, importable with ``ctr images import``."""
    size_bytes: int
    """The image's uncompressed size, as buildah reports it."""
    archive_bytes: int
    build_seconds: float
    """Of the build that made it (a cached image keeps its original figure)."""
    rebuilt: bool
    """Built by this call (not found in the cache)."""


# -- cache -----------------------------------------------------------------------------------------
def cache_root() -> Path:
    base = os.environ.get("MXJOB_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mxjob-operator"
    )
    return Path(base) / "images"


@dataclass(frozen=True)
class ImageRecord:
    """What the cache keeps of one built image (``<name>.json``)."""

    ref: str
    digest: str
    archive: str
    size_bytes: int
    archive_bytes: int
    build_seconds: float
    built_at: str

    def image(self, *, rebuilt: bool) -> BuiltImage:
        return BuiltImage(
            ref=self.ref,
            archive=Path(self.archive),
            size_bytes=self.size_bytes,
            archive_bytes=self.archive_bytes,
            build_seconds=self.build_seconds,
            rebuilt=rebuilt,
        )


def load_record(cache: Path, name: str, digest: str) -> ImageRecord | None:
    """The cached record of ``name`` when it is for ``digest`` and its archive exists."""
    try:
        record = ImageRecord(**json.loads((cache / f"{name}.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if record.digest != digest or not Path(record.archive).is_file():
        return None
    return record


def save_record(cache: Path, name: str, record: ImageRecord) -> None:
    staging = cache / f".{name}.json.tmp"
    staging.write_text(json.dumps(asdict(record), indent=2) + "\n")
    staging.replace(cache / f"{name}.json")


@contextlib.contextmanager
def cache_lock(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def layers_size(archive: Path) -> int:
    """The image's uncompressed size: its layers, as the docker-archive stores them."""
    with tarfile.open(archive) as tar:
        return sum(m.size for m in tar.getmembers() if m.name.endswith((".tar", "layer.tar")))
