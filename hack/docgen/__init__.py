"""The reference pages of docs/reference/, made from the sources they describe.

Why generated: a hand-kept reference drifts from the code the day a flag, a field or a metric is
added, and nobody notices until a user follows it. Each page here reads the facts where they
live (the CRD ``hack/gen_crd.py`` writes, ``shared/``'s constants and defaulting, the processes'
settings and argument parsers, their Prometheus registries, the chart's values schema, the
alert rules) and keeps only the prose that explains them. ``make generate`` writes the pages;
``python -m docgen --check`` (and tests/hack/docgen/test_pages.py) fails when one is stale.
"""
