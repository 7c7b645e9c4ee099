#!/usr/bin/env bash
# Builds the real node's own programs from the pinned Go modules in hack/containerd and
# hack/coredns into a per-machine cache outside the work tree, once per pinned version:
# containerd, containerd-shim-runc-v2 and ctr, and CoreDNS. (kubelet and kube-proxy are built
# with the control plane by hack/build-binaries.sh.) Static builds without the snapshotters that
# need cgo or kernel features this machine lacks (btrfs, devmapper, zfs).
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

grep -q "^require github.com/containerd/containerd/v2 ${CONTAINERD_VERSION}\$" \
  "${HACK_DIR}/containerd/go.mod" || {
  echo "hack/containerd/go.mod does not pin containerd ${CONTAINERD_VERSION}" >&2; exit 1; }
grep -q "^require github.com/coredns/coredns ${COREDNS_VERSION}\$" "${HACK_DIR}/coredns/go.mod" || {
  echo "hack/coredns/go.mod does not pin CoreDNS ${COREDNS_VERSION}" >&2; exit 1; }

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
BIN_DIR="${CACHE_ROOT}/node-containerd-${CONTAINERD_VERSION}-coredns-${COREDNS_VERSION}/bin"
STAMP="${BIN_DIR}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${BIN_DIR}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build the real node's programs" >&2; exit 1; }
mkdir -p "${BIN_DIR}"
start=$(date +%s)
echo "building containerd ${CONTAINERD_VERSION} and CoreDNS ${COREDNS_VERSION} into ${BIN_DIR}" >&2

# Built beside the cache and moved in whole, so an interrupted build never leaves a truncated
# binary behind a stamp.
staging="$(mktemp -d "${BIN_DIR}/.staging.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
module=github.com/containerd/containerd/v2
(cd "${HACK_DIR}/containerd" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -tags "no_btrfs no_devmapper no_zfs" \
  -ldflags "-s -w -X ${module}/version.Version=${CONTAINERD_VERSION}" \
  -o "${staging}/" "${module}/cmd/containerd" "${module}/cmd/containerd-shim-runc-v2" \
  "${module}/cmd/ctr") >&2
(cd "${HACK_DIR}/coredns" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w" -o "${staging}/coredns" github.com/coredns/coredns) >&2
mv "${staging}"/* "${BIN_DIR}/"

end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${BIN_DIR}/.build-seconds"
touch "${STAMP}"
echo "${BIN_DIR}"
