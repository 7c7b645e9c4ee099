"""Objects as the informers and the store cache them, shared by their tests."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def obj(name: str, rv: str, *, uid: str | None = None, job: str = "j", **extra: Any) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"uid-{name}",
            "resourceVersion": rv,
            "labels": {"job": job},
            "managedFields": [{"manager": "x"}],
        },
        **extra,
    }
