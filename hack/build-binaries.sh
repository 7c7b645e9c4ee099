#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, and the real
# node's kubelet and kube-proxy from the pinned
# modules in hack/k8s and hack/etcd into a per-machine cache outside the work tree, once per pinned
# version. A cache built before a binary joined the list is extended with the missing ones only
# (they share Go's build cache, so kube-scheduler alone takes seconds after the others).
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

KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)
missing=()
for command in "${KUBE_COMMANDS[@]}"; do
  [[ -x "${BIN_DIR}/${command}" ]] || missing+=("${command}")
done
[[ -x "${BIN_DIR}/etcd" ]] || missing+=(etcd)

if [[ -f "${STAMP}" && ${#missing[@]} -eq 0 ]]; then
  echo "${BIN_DIR}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the control plane binaries" >&2; exit 1; }
mkdir -p "${BIN_DIR}"
rm -f "${STAMP}"
start=$(date +%s)
echo "building ${missing[*]} (Kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION}) into ${BIN_DIR}" >&2

minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for p in "${pkgs[@]}"; do
  ldflags+=" -X ${p}.gitVersion=${KUBE_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
  ldflags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
done

# Each binary is built beside the cache and moved in whole, so an interrupted build never leaves a
# truncated binary that the check above would take for a finished one.
staging="$(mktemp -d "${BIN_DIR}/.staging.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
kube_pkgs=()
for command in "${missing[@]}"; do
  [[ "${command}" == etcd ]] || kube_pkgs+=("k8s.io/kubernetes/cmd/${command}")
done
if [[ ${#kube_pkgs[@]} -gt 0 ]]; then
  (cd "${HACK_DIR}/k8s" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" \
    -o "${staging}/" "${kube_pkgs[@]}") >&2
fi
if [[ ! -x "${BIN_DIR}/etcd" ]]; then
  (cd "${HACK_DIR}/etcd" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "${staging}/etcd" go.etcd.io/etcd/server/v3) >&2
fi
mv "${staging}"/* "${BIN_DIR}/"

end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "${missing[*]}: $((end - start))" >> "${BIN_DIR}/.build-seconds"
touch "${STAMP}"
echo "${BIN_DIR}"
