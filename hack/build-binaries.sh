#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl and etcd from the pinned modules in
# hack/k8s and hack/etcd into a per-machine cache outside the work tree, once per pinned version.
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

grep -q "k8s.io/kubernetes ${KUBE_VERSION}\$" "${HACK_DIR}/k8s/go.mod" || {
  echo "hack/k8s/go.mod does not pin k8s.io/kubernetes ${KUBE_VERSION}" >&2; exit 1; }
grep -q "go.etcd.io/etcd/server/v3 ${ETCD_VERSION}\$" "${HACK_DIR}/etcd/go.mod" || {
  echo "hack/etcd/go.mod does not pin go.etcd.io/etcd/server/v3 ${ETCD_VERSION}" >&2; exit 1; }

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
BIN_DIR="${CACHE_ROOT}/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}/bin"
STAMP="${BIN_DIR}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${BIN_DIR}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the control plane binaries" >&2; exit 1; }
mkdir -p "${BIN_DIR}"
start=$(date +%s)
echo "building Kubernetes ${KUBE_VERSION} and etcd ${ETCD_VERSION} into ${BIN_DIR} (first time only)" >&2

minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${pkgs[@]}"; do
  ldflags+=" -X ${p}.gitVersion=${KUBE_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
  ldflags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
done

(cd "${HACK_DIR}/k8s" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" \
  -o "${BIN_DIR}/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl) >&2
(cd "${HACK_DIR}/etcd" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
  -o "${BIN_DIR}/etcd" go.etcd.io/etcd/server/v3) >&2

end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${BIN_DIR}/.build-seconds"
touch "${STAMP}"
echo "${BIN_DIR}"
