"""The late images: make test builds each one after the binaries it packs, for names the
builder knows."""

from __future__ import annotations

import pytest

from localkube.scenarios import late_images
from tests.helpers.late_builds import late_builds

PACKS = {
    "tvm-examples": None,
    "katib": "third-party-katib",
    "kueue": "third-party-kueue",
    "kueue-current": "third-party-kueue-current",
}


def test_every_image_the_builder_knows_is_built_in_the_background_after_its_binaries() -> None:
    order = late_builds()
    images = [target.removeprefix("late-images-") for target in order if "late-images-" in target]
    assert sorted(images) == sorted(late_images.BUILDERS) == sorted(PACKS)
    for name, binaries in PACKS.items():
        if binaries is not None:
            assert order.index(binaries) < order.index(f"late-images-{name}"), order


def test_an_unknown_name_is_refused_with_the_names_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        late_images.main(["bogus"])
    assert exited.value.code == 2
    assert "invalid choice: 'bogus' (choose from 'katib', 'kueue'" in capsys.readouterr().err
