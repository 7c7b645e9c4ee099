#!/usr/bin/env bash
# Builds `prometheus` (cmd/prometheus) and `promtool` (cmd/promtool) from the module pinned in
# hack/prometheus into a per-machine cache outside the work tree, once per pinned version, stamped
# with the release's version as its Makefile (promu) stamps it, and links both into .local/bin.
# Prints the binaries' directory on stdout; progress goes to stderr.
#
# The web UI's assets are not built (that needs npm): `prometheus` is built without the
# `builtinassets` tag, so it scrapes, evaluates rules and answers the HTTP API, and its UI pages
# say the assets are missing. promtool needs none.
#
# Of the service discoveries only Kubernetes's is compiled in (Prometheus's own build tags
# remove_all_sd and enable_kubernetes_sd, plugins/ in its module): the operator is found through
# the Kubernetes API and nothing else is used, and the cloud SDKs of the others are then neither
# downloaded nor compiled. A scrape config naming another discovery is refused at load.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=github.com/prometheus/prometheus
require_pin prometheus "${MODULE}" "${PROMETHEUS_VERSION}"

BIN_DIR="${CACHE_ROOT}/prometheus-${PROMETHEUS_VERSION}/bin"
LINK_DIR="${HACK_DIR}/../.local/bin"

link() {
  mkdir -p "${LINK_DIR}"
  for program in prometheus promtool; do
    ln -sfn "${BIN_DIR}/${program}" "${LINK_DIR}/${program}"
  done
}

if [[ -f "${BIN_DIR}/.complete" ]]; then
  link
fi
exit_if_built "${BIN_DIR}" "${BIN_DIR}"

build_begin "${BIN_DIR}" prometheus \
  "building prometheus and promtool ${PROMETHEUS_VERSION} into ${BIN_DIR} (first time only)"
# As promu stamps a release: github.com/prometheus/common/version, which `--version` prints.
# The module's tag v0.<M><mm>.<patch> is the release <M>.<mm>.<patch> (v0.316.0: 3.16.0).
tag="${PROMETHEUS_VERSION#v0.}"
release="$((${tag%%.*} / 100)).$((${tag%%.*} % 100)).${tag#*.}"
flags="-X github.com/prometheus/common/version.Version=${release}"
flags+=" -X github.com/prometheus/common/version.Branch=HEAD"
flags+=" -X github.com/prometheus/common/version.BuildUser=mxjob-operator"
for program in prometheus promtool; do
  go_build --ldflags "${flags}" "${HACK_DIR}/prometheus" "${STAGING}/${program}" \
    -tags remove_all_sd,enable_kubernetes_sd "${MODULE}/cmd/${program}"
done
install_staged "${BIN_DIR}"
link
build_end "${BIN_DIR}" "${BIN_DIR}"
