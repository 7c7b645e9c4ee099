"""``python -m localkube.scenarios.late_images NAME...``: build the images only some real-node
tests run (the TVM examples', Katib's, Kueue's) ahead of those tests.

make test builds them in the background beside its first tests, each right after the binaries
it packs (``LATE_BUILDS`` in the Makefile), so no real-node test spends minutes in a fixture
building one. Each is built as the fixtures build it, so theirs find it in the per-machine
cache; a fixture that comes first builds it itself, the image cache's lock keeping the two apart.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from localkube.images.build import TVM_EXAMPLES, ensure_extra_image
from localkube.images.cache import BuiltImage
from localkube.thirdparty import katib
from localkube.thirdparty.kueue import CURRENT, V0_10, KueueRelease


def _kueue(release: KueueRelease) -> Callable[[], list[BuiltImage]]:
    return lambda: [release.image(release.source.build())]


BUILDERS: dict[str, Callable[[], list[BuiltImage]]] = {
    "tvm-examples": lambda: [ensure_extra_image(TVM_EXAMPLES)],
    "katib": lambda: katib.images().all(),
    "kueue": _kueue(V0_10),
    "kueue-current": _kueue(CURRENT),
}
"""Each name's images, built (or found cached) the way the real-node tests' fixtures ask."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.late_images", description=__doc__.splitlines()[0]
    )
    parser.add_argument("names", nargs="+", choices=sorted(BUILDERS))
    args = parser.parse_args(argv)
    for name in args.names:
        started = time.monotonic()
        try:
            images = BUILDERS[name]()
        except RuntimeError as error:  # ImageBuildError, KatibError, KueueError
            print(f"the {name} images failed to build: {error}", file=sys.stderr)
            return 1
        for image in images:
            state = "built" if image.rebuilt else "cached"
            print(f"{image.ref} {state}")
        print(f"{name}: {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
