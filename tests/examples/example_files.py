"""What the tests of ``examples/`` share: where the examples are, and their scripts as modules.

The entry scripts (``examples/scripts``) are not a package of the project: an image puts that
folder on ``PYTHONPATH``. The tests load them from their files instead.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from localkube.base.paths import PROJECT_ROOT

EXAMPLES = PROJECT_ROOT / "examples"
SCRIPTS = EXAMPLES / "scripts"
SDK = PROJECT_ROOT / "sdk"
"""Where the progress reporter the scripts import lives; the example images install it."""
CPU_TRAIN_JOB = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu.yaml"
KATIB_EXPERIMENT = EXAMPLES / "katib" / "mxjob-cpu-train.yaml"

# Katib's StdOut/File collector's default filter (pkg/metricscollector/v1beta1/common/const.go,
# DefaultFilter): group 1 is a metric's name, group 2 its value. Go's RE2 and Python read it alike.
KATIB_DEFAULT_FILTER = r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)"


def load_script(name: str) -> ModuleType:
    """``examples/scripts/<name>.py`` as the module ``name`` (imported once per test session)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec and spec.loader, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))
