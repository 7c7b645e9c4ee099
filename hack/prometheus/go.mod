// Pins the Prometheus release whose `promtool` checks and unit-tests the operator's alerts and
// whose `prometheus` scrapes the operator on the real node (hack/build-prometheus.sh builds both).
// The module's tag v0.316.0 is Prometheus 3.16.0.
module github.com/mxjob-operator/hack/prometheus

go 1.26.0

require github.com/prometheus/prometheus v0.316.0
