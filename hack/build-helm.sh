#!/usr/bin/env bash
# Builds `helm` (cmd/helm) from the module pinned in hack/helm into a per-machine cache outside the
# work tree, once per pinned version, stamped as the release's own Makefile stamps it (its version,
# and the Kubernetes version of its client-go as the default capabilities of `helm template` and
# `helm lint`), and links it as .local/bin/helm beside the plane's kubectl. Prints the binary's
# path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=helm.sh/helm/v3
require_pin helm "${MODULE}" "${HELM_VERSION}"

BIN_DIR="${CACHE_ROOT}/helm-${HELM_VERSION}/bin"
LINK="${HACK_DIR}/../.local/bin/helm"

link() {
  mkdir -p "$(dirname "${LINK}")"
  ln -sfn "${BIN_DIR}/helm" "${LINK}"
}

if [[ -f "${BIN_DIR}/.complete" ]]; then
  link
fi
exit_if_built "${BIN_DIR}" "${BIN_DIR}/helm"

build_begin "${BIN_DIR}" helm "building helm ${HELM_VERSION} into ${BIN_DIR} (first time only)"
# As helm's Makefile: client-go v0.<minor>.x is Kubernetes 1.<minor>.
client_go="$(cd "${HACK_DIR}/helm" && GOFLAGS=-mod=mod go list -f '{{.Version}}' -m k8s.io/client-go)"
minor="${client_go#v0.}"; minor="${minor%%.*}"
flags="-X ${MODULE}/internal/version.version=${HELM_VERSION}"
flags+=" -X ${MODULE}/internal/version.gitTreeState=clean"
for p in pkg/lint/rules pkg/chartutil; do
  flags+=" -X ${MODULE}/${p}.k8sVersionMajor=1 -X ${MODULE}/${p}.k8sVersionMinor=${minor}"
done
go_build --ldflags "${flags}" "${HACK_DIR}/helm" "${STAGING}/helm" "${MODULE}/cmd/helm"
install_staged "${BIN_DIR}"
link
build_end "${BIN_DIR}" "${BIN_DIR}/helm"
