"""What makes an image rebuild: the .dockerignore rules, the inputs digest, the cache record."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from localkube.images.build import DOCKERFILE_IMAGES, Buildah
from localkube.images.cache import ImageRecord, load_record, save_record
from localkube.images.inputs import context_files, ignore_patterns, included, inputs_digest


def test_comments_and_blank_lines_are_not_patterns() -> None:
    assert ignore_patterns("# all\n*\n\n  !webhook/  \n# done\n") == ["*", "!webhook/"]


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("webhook/app.py", True),
        ("webhook/__pycache__/app.cpython-311.pyc", False),
        ("shared/deep/__pycache__/x.pyc", False),
        ("tests/test_x.py", False),
        ("README.md", False),
        ("pyproject.toml", True),
    ],
)
def test_the_last_matching_pattern_decides_and_bang_lets_a_path_back(path: str, kept: bool) -> None:
    patterns = ["*", "!webhook", "!shared", "!pyproject.toml", "**/__pycache__"]
    assert included(path, patterns) is kept


def test_a_folder_pattern_covers_every_file_below_it() -> None:
    assert not included("docs/a/b/c.md", ["docs"])
    assert included("docsx/a.md", ["docs"])


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def context(tmp_path: Path) -> Path:
    write(tmp_path, {"Dockerfile": "FROM x\n", "app/main.py": "print(1)\n", "notes.txt": "n\n"})
    return tmp_path


def digest(context: Path, **args: str) -> str:
    return inputs_digest(
        dockerfile=context / "Dockerfile",
        context=context,
        patterns=["notes.txt"],
        build_args=dict(args),
    )


def test_the_digest_changes_with_an_included_file_but_not_an_ignored_one(context: Path) -> None:
    before = digest(context)
    (context / "notes.txt").write_text("changed\n")
    assert digest(context) == before
    (context / "app" / "main.py").write_text("print(2)\n")
    assert digest(context) != before


def test_the_digest_changes_with_a_rename_the_dockerfile_and_a_build_argument(
    context: Path,
) -> None:
    before = digest(context)
    assert digest(context, PYTHON_IMAGE="a") != before
    assert digest(context, PYTHON_IMAGE="a") != digest(context, PYTHON_IMAGE="b")
    (context / "app" / "main.py").rename(context / "app" / "other.py")
    renamed = digest(context)
    assert renamed != before
    (context / "Dockerfile").write_text("FROM y\n")
    assert digest(context) != renamed


def test_context_files_are_the_included_files_sorted(context: Path) -> None:
    found = context_files(context, ["notes.txt"])
    assert [p.relative_to(context).as_posix() for p in found] == ["Dockerfile", "app/main.py"]


def test_the_project_images_leave_tests_and_caches_out_of_their_inputs() -> None:
    for image in DOCKERFILE_IMAGES:
        patterns = ignore_patterns(image.ignore_file.read_text())
        files = [p.relative_to(image.context).as_posix() for p in
                 context_files(image.context, patterns)]  # fmt: skip
        assert files, image.name
        assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")], image.name
        assert not [f for f in files if f.startswith(("tests/", ".local/", ".venv"))], image.name


def record(archive: Path, digest: str) -> ImageRecord:
    return ImageRecord(
        ref="docker.io/test/x:dev-1",
        digest=digest,
        archive=str(archive),
        size_bytes=10,
        archive_bytes=12,
        build_seconds=1.5,
        built_at="2026-01-01T00:00:00Z",
    )


def test_a_record_is_used_only_for_the_same_inputs_and_an_existing_archive(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "x-abc.tar"
    archive.write_bytes(b"tar")
    save_record(tmp_path, "x", record(archive, "abc"))
    found = load_record(tmp_path, "x", "abc")
    assert found == record(archive, "abc")
    assert found is not None
    assert found.image(rebuilt=False).archive == archive
    assert load_record(tmp_path, "x", "def") is None
    archive.unlink()
    assert load_record(tmp_path, "x", "abc") is None


def test_a_damaged_record_means_a_rebuild(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    assert load_record(tmp_path, "x", "abc") is None
    (tmp_path / "x.json").write_text('{"ref": "only one field"}')
    assert load_record(tmp_path, "x", "abc") is None


def test_a_path_let_back_in_below_a_left_out_folder_is_found(tmp_path: Path) -> None:
    write(tmp_path, {"keep/inner/a.py": "", "keep/other.py": "", ".local/big/b": "", "c": ""})
    found = context_files(tmp_path, ["*", "!keep/inner", "!c"])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["c", "keep/inner/a.py"]


def test_buildah_keeps_its_network_configuration_in_the_cache_not_in_etc(tmp_path: Path) -> None:
    buildah = Buildah(tmp_path)
    config = Path(buildah.environment["CONTAINERS_CONF"])
    assert config.is_relative_to(tmp_path)
    network_dir = Path(tomllib.loads(config.read_text())["network"]["network_config_dir"])
    assert network_dir.is_dir() and network_dir.is_relative_to(tmp_path)
