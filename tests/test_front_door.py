"""The front door: what README.md, CONTRIBUTING.md and examples/README.md promise is what runs.

The README's install command and first job are the ones the real-node tests run: the same
overlay (``localkube.realnode.cluster.DEFAULT_BASE``, which the session's install applies), the
same chart, release and namespace (``tests/e2e/test_real_node_helm.py``), the same example file
(``tests/e2e/test_real_node_training.py``, ``tests/e2e/test_real_node_install.py``) and the same
example image (the one ``make images`` builds from ``examples/Dockerfile``). The README stays short
and opens with the install, ``kubectl get mxjobs`` and ``make demo``; its Develop part names the
two commands a fresh machine needs. examples/README.md names every file of ``examples/`` and
nothing that does not exist; CONTRIBUTING.md names every ``make`` target that has a help line.
"""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import subprocess
from pathlib import Path

import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import EXAMPLES_REF
from localkube.realnode.cluster import DEFAULT_BASE, SYSTEM_NAMESPACE, RealCluster
from localkube.scenarios.jobwatch import DEFAULT_JOB
from localkube.thirdparty import helm
from tests.e2e import helm_fixtures

README = PROJECT_ROOT / "README.md"
CONTRIBUTING = PROJECT_ROOT / "CONTRIBUTING.md"
EXAMPLES = PROJECT_ROOT / "examples"
EXAMPLES_INDEX = EXAMPLES / "README.md"
E2E = PROJECT_ROOT / "tests" / "e2e"
MAX_LINES = 150
OPENING_LINES = 50
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def opening() -> str:
    """The README's first lines: what a user reads before scrolling."""
    return "\n".join(README.read_text(encoding="utf-8").splitlines()[:OPENING_LINES])


def commands(text: str) -> list[list[str]]:
    """The words of every command line in the fenced code blocks of ``text`` (comments dropped)."""
    found: list[list[str]] = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                found.append(words)
    return found


def after(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


def kustomize_install(text: str) -> list[str]:
    return [
        after(words, "-k")
        for words in commands(text)
        if words[:2] == ["kubectl", "apply"] and "-k" in words
    ]


def helm_install(text: str) -> list[list[str]]:
    return [words for words in commands(text) if words[:2] == ["helm", "install"]]


def applied_files(text: str) -> list[str]:
    return [
        after(words, "-f")
        for words in commands(text)
        if words[:2] == ["kubectl", "apply"] and "-f" in words
    ]


def section(text: str, heading: str) -> str:
    """The Markdown section under ``## <heading>``, up to the next heading of that level."""
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert found, f"no '## {heading}' section"
    return found.group(1)


def module_tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def calls_of(tree: ast.AST, name: str) -> list[ast.Call]:
    """Every call of a function or method named ``name``."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


def token(node: ast.expr) -> str:
    """A call argument as text: a constant's value, a name, ``module.NAME``, ``str(x)`` as x."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return token(node.args[0])
    return ast.unparse(node)


def imported_from(tree: ast.Module, module: str) -> set[str]:
    return {
        alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


def path_constant(tree: ast.Module, name: str) -> Path:
    """A module constant written ``PROJECT_ROOT / "a" / "b" ...``, resolved."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [name]:
            parts: list[str] = []
            value = node.value
            while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
                assert isinstance(value.right, ast.Constant), ast.unparse(node)
                parts.insert(0, str(value.right.value))
                value = value.left
            assert ast.unparse(value) == "PROJECT_ROOT", ast.unparse(node)
            return PROJECT_ROOT.joinpath(*parts)
    raise AssertionError(f"no constant {name}")


def test_the_readme_is_short_and_opens_with_the_install_a_first_job_and_the_demo() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines, at most {MAX_LINES}"
    text = opening()
    assert "kubectl apply --server-side -k manifests/overlays/in-cluster" in text
    assert "helm install mxjob-operator charts/mxjob-operator" in text
    assert "kubectl get mxjobs" in text
    assert "make demo" in text


def test_the_readme_installs_the_overlay_the_real_node_tests_install() -> None:
    overlays = kustomize_install(opening())
    assert overlays == [f"manifests/overlays/{DEFAULT_BASE}"], overlays
    assert (PROJECT_ROOT / overlays[0] / "kustomization.yaml").is_file()
    # The session's install, and its putting back, apply the overlay of DEFAULT_BASE: none names
    # another base.
    assert inspect.signature(RealCluster.install_operator).parameters["base"].default == (
        DEFAULT_BASE
    )
    installs = calls_of(module_tree(E2E / "real_node_fixtures.py"), "install_operator")
    assert installs, "the real-node fixtures no longer install the operator"
    assert all(k.arg != "base" for call in installs for k in call.keywords), [
        ast.unparse(call) for call in installs
    ]


def test_the_readme_installs_the_chart_the_real_node_helm_test_installs() -> None:
    installs = helm_install(opening())
    assert len(installs) == 1, installs
    words = installs[0]
    release, chart = words[2], words[3]
    namespace = after(words, "-n") if "-n" in words else after(words, "--namespace")
    assert (PROJECT_ROOT / chart).resolve() == helm.CHART.resolve()
    assert release == helm_fixtures.RELEASE
    assert namespace == SYSTEM_NAMESPACE
    tree = module_tree(E2E / "test_real_node_helm.py")
    assert "RELEASE" in imported_from(tree, "tests.e2e.helm_fixtures")
    assert "SYSTEM_NAMESPACE" in imported_from(tree, "localkube.realnode.cluster")
    wanted = ["install", "RELEASE", "helm.CHART", "--namespace", "SYSTEM_NAMESPACE"]
    runs = [[token(arg) for arg in call.args] for call in calls_of(tree, "run")]
    found = any(args[i : i + len(wanted)] == wanted for args in runs for i in range(len(args)))
    assert found, f"no helm.run(..., {', '.join(wanted)}) in test_real_node_helm.py: {runs}"


def test_the_readme_runs_the_example_the_real_node_tests_run() -> None:
    applied = applied_files(opening())
    assert len(applied) == 1, applied
    example = PROJECT_ROOT / applied[0]
    assert example == DEFAULT_JOB
    training = module_tree(E2E / "test_real_node_training.py")
    assert "DEFAULT_JOB" in imported_from(training, "localkube.scenarios.jobwatch")
    runs = calls_of(training, "run_job")
    shown = [ast.unparse(call) for call in runs]
    assert runs, "test_real_node_training.py no longer calls run_job"
    assert all(any(token(arg) == "DEFAULT_JOB" for arg in call.args) for call in runs), shown
    install = module_tree(E2E / "test_real_node_install.py")
    assert path_constant(install, "TRAIN_EXAMPLE") == example


def test_the_readme_names_the_image_the_first_job_runs_and_how_it_is_built() -> None:
    job = yaml.safe_load(DEFAULT_JOB.read_text(encoding="utf-8"))
    images = {
        container["image"]
        for replica in job["spec"]["mxReplicaSpecs"].values()
        for container in replica["template"]["spec"]["containers"]
    }
    assert len(images) == 1, images
    (image,) = images
    text = opening()
    assert image in text
    assert f"docker build -f examples/Dockerfile -t {image} ." in text
    assert "examples/Dockerfile" in text
    # make images builds examples/Dockerfile under the same name (docker.io/ added).
    assert f"docker.io/{image}" == EXAMPLES_REF


def test_the_readme_develop_part_names_make_demo_and_make_test() -> None:
    develop = section(README.read_text(encoding="utf-8"), "Develop")
    assert "make demo" in develop
    assert "make test" in develop
    assert "CONTRIBUTING.md" in develop


def test_the_readme_tells_no_dated_story() -> None:
    text = README.read_text(encoding="utf-8")
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "a date in README.md"
    assert "fresh-check" not in text, "the suite's timings belong in CONTRIBUTING.md"


def example_files() -> set[str]:
    """Every file of ``examples/`` git knows or would add, relative to it, but the index."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "examples"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = {str(Path(name).relative_to("examples")) for name in listed}
    files.discard("README.md")
    return {name for name in files if (EXAMPLES / name).is_file()}


def test_the_examples_index_names_every_file_of_examples() -> None:
    files = example_files()
    assert "v1/train/mx_job_dist_cpu.yaml" in files, files
    linked = {
        str((EXAMPLES / target.partition("#")[0]).resolve().relative_to(EXAMPLES.resolve()))
        for target in LINK.findall(EXAMPLES_INDEX.read_text(encoding="utf-8"))
        if not target.startswith(("http:", "https:", "#", "../"))
    }
    assert not files - linked, f"not in examples/README.md: {sorted(files - linked)}"


def test_the_examples_index_names_nothing_that_does_not_exist() -> None:
    text = EXAMPLES_INDEX.read_text(encoding="utf-8")
    missing = []
    for target in LINK.findall(text):
        if target.startswith(("http:", "https:", "#")):
            continue
        path = (EXAMPLES / target.partition("#")[0]).resolve()
        # Pages under docs/ are checked with the rest of the documentation.
        if path.is_relative_to(PROJECT_ROOT / "docs"):
            continue
        if not path.exists():
            missing.append(target)
    for named in re.findall(r"\bexamples/[\w./-]+\.(?:yaml|py|md)\b", text):
        if not (PROJECT_ROOT / named).is_file():
            missing.append(named)
    assert not missing, f"examples/README.md names what does not exist: {missing}"


def test_contributing_lists_every_make_target_with_a_help_line() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    targets = re.findall(r"^([a-z0-9-]+):.*## ", makefile, re.M)
    assert "test" in targets and "demo" in targets, targets
    text = CONTRIBUTING.read_text(encoding="utf-8")
    missing = [t for t in targets if not re.search(rf"`make {re.escape(t)}(?![\w-])", text)]
    assert not missing, f"CONTRIBUTING.md does not list: {missing}"
