"""The Helm page takes a value's description from the comment above it in values.yaml when the
schema has none: the comment's prose, without the example that follows it."""

from __future__ import annotations

from pathlib import Path

from docgen.helm_page import value_comments

VALUES = """\
# The file's own header: no key follows it directly.

# The release namespace, labelled. Create it first, then install:
#   kubectl create namespace mxjob-system
namespace:
  create: false
  # restricted | baseline | privileged
  podSecurity: restricted
webhook:
  replicas: 2
  # Appended to the container's
  # arguments.
  extraArgs: []
"""


def test_a_comment_describes_the_key_below_it_up_to_its_example(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(VALUES)
    assert value_comments(path) == {
        "namespace": "The release namespace, labelled.",
        "namespace.podSecurity": "restricted | baseline | privileged",
        "webhook.extraArgs": "Appended to the container's arguments.",
    }
