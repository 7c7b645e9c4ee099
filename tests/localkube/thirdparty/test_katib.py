"""localkube.thirdparty.katib: its archive, its install folder and its images' inputs (no build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localkube.base.builds import pinned_version
from localkube.images.build import DockerfileImage
from localkube.images.inputs import context_files, ignore_patterns
from localkube.thirdparty import katib

PROGRAMS = ("katib-controller", "katib-db-manager", "goptuna-suggestion", "file-metricscollector")
"""What ``hack/build-third-party.sh katib`` puts in ``bin/``."""


def test_the_archive_is_named_as_the_build_script_looks_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIRD_PARTY_DIR", str(tmp_path))
    assert pinned_version("KATIB_VERSION") == "v0.19.0"
    assert katib.archive() == tmp_path / "katib-v0.19.0-src.tar.gz"


def test_a_missing_archive_is_named_and_building_raises_katibs_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIRD_PARTY_DIR", str(tmp_path))
    assert katib.missing() == (
        f"Katib's release source {tmp_path / 'katib-v0.19.0-src.tar.gz'} is missing"
        " (THIRD_PARTY_DIR)"
    )
    with pytest.raises(katib.KatibError, match="is missing"):
        katib.build()


def test_the_install_is_the_standalone_postgres_one_inside_the_build(tmp_path: Path) -> None:
    assert katib.install_dir(tmp_path) == (
        tmp_path / "manifests" / "installs" / "katib-standalone-postgres"
    )


def _built_images(home: Path) -> dict[str, DockerfileImage]:
    return {spec.attribute: spec.dockerfile(home) for spec in katib.SPECS}


def test_each_program_image_takes_only_its_binary_from_the_builds_bin(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in PROGRAMS:
        (bin_dir / program).write_bytes(b"\x7fELF")
    programs = {spec.attribute: spec.program for spec in katib.SPECS if spec.program}
    assert sorted(programs.values()) == sorted(PROGRAMS)
    for attribute, program in programs.items():
        image = _built_images(tmp_path)[attribute]
        assert image.context == bin_dir
        assert image.dockerfile.is_file() and image.ignore_file.is_file()
        patterns = ignore_patterns(image.ignore_file.read_text())
        assert context_files(bin_dir, patterns) == [bin_dir / program]
        assert program in image.dockerfile.read_text()


def test_the_postgres_image_is_built_from_its_own_folder_with_its_entrypoint(
    tmp_path: Path,
) -> None:
    image = _built_images(tmp_path)["postgres"]
    folder = katib.IMAGES_DIR / "postgres"
    assert (image.dockerfile, image.context) == (folder / "Dockerfile", folder)
    patterns = ignore_patterns(image.ignore_file.read_text())
    assert context_files(folder, patterns) == [folder / "entrypoint.sh"]


def test_every_image_has_its_own_cache_name_and_repository(tmp_path: Path) -> None:
    images = list(_built_images(tmp_path).values())
    assert len({image.name for image in images}) == len(katib.SPECS) == 5
    assert [image.repository for image in images] == [
        "docker.io/mxjob-operator/katib-controller",
        "docker.io/mxjob-operator/katib-db-manager",
        "docker.io/mxjob-operator/katib-suggestion-goptuna",
        "docker.io/mxjob-operator/katib-file-metrics-collector",
        "docker.io/mxjob-operator/katib-postgres",
    ]
    fields = list(katib.KatibImages.__dataclass_fields__)
    assert fields == [spec.attribute for spec in katib.SPECS]
