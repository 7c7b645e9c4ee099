"""apiserver_profile: reading ``go tool pprof -traces`` into CPU-seconds per area."""

from __future__ import annotations

import pytest

from bench.apiserver_profile import AREAS, area_seconds, read_traces

CRD = (
    "k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler)"
    ".serveResource.CreateResource.createHandler.func9.2"
)
MUTATING = "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating.(*mutatingDispatcher).Dispatch"
VALIDATING = (
    "k8s.io/apiserver/pkg/admission/plugin/webhook/validating.(*validatingDispatcher).Dispatch"
)
TRACES = f"""\
File: kube-apiserver
Type: cpu
Time: 2026-11-27 13:10:00 UTC
Duration: 20s, Total samples = 1.23mins (369.00%)
-----------+-------------------------------------------------------
    1.10mins   runtime.memmove
             encoding/json.(*decodeState).object
             {CRD}
-----------+-------------------------------------------------------
       120ms   crypto/tls.(*Conn).Write
             net/http.(*response).finishRequest (inline)
             {MUTATING}
             {CRD}
-----------+-------------------------------------------------------
        30ms   runtime.mallocgc
             {VALIDATING}
             {MUTATING}
-----------+-------------------------------------------------------
       250us   runtime.futex
-----------+-------------------------------------------------------
"""


def test_read_traces_gives_each_stack_innermost_first_with_its_seconds_in_any_unit() -> None:
    samples = read_traces(TRACES)
    assert [s.seconds for s in samples] == pytest.approx([66.0, 0.12, 0.03, 0.00025])
    assert samples[1].stack == (
        "crypto/tls.(*Conn).Write", "net/http.(*response).finishRequest", MUTATING, CRD
    )  # fmt: skip
    assert samples[3].stack == ("runtime.futex",)


def test_an_area_counts_each_sample_once_however_many_of_its_functions_match() -> None:
    found = area_seconds(read_traces(TRACES))
    assert set(found) == set(AREAS)
    # The validating dispatcher nested in the mutating one's stack is not counted twice.
    assert found["admission webhooks"] == pytest.approx(0.15)
    assert found["custom resource create"] == pytest.approx(66.12)
    assert found["TLS"] == pytest.approx(0.12)
    assert found["conversion webhook"] == 0.0


def test_text_without_a_trace_reads_as_no_sample() -> None:
    assert read_traces("File: kube-apiserver\nno samples here\n") == []
