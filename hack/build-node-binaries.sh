#!/usr/bin/env bash
# Builds the real node's own programs from the pinned Go modules in hack/containerd and
# hack/coredns into a per-machine cache outside the work tree, once per pinned version:
# containerd, containerd-shim-runc-v2 and ctr, and CoreDNS. (kubelet and kube-proxy are built
# with the control plane by hack/build-binaries.sh.) Static builds without the snapshotters that
# need cgo or kernel features this machine lacks (btrfs, devmapper, zfs).
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

CONTAINERD=github.com/containerd/containerd/v2
require_pin containerd "${CONTAINERD}" "${CONTAINERD_VERSION}" containerd
require_pin coredns github.com/coredns/coredns "${COREDNS_VERSION}" CoreDNS

BIN_DIR="${CACHE_ROOT}/node-containerd-${CONTAINERD_VERSION}-coredns-${COREDNS_VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}"

build_begin "${BIN_DIR}" "the real node's programs" \
  "building containerd ${CONTAINERD_VERSION} and CoreDNS ${COREDNS_VERSION} into ${BIN_DIR}"
go_build --ldflags "-X ${CONTAINERD}/version.Version=${CONTAINERD_VERSION}" \
  "${HACK_DIR}/containerd" "${STAGING}/" -tags "no_btrfs no_devmapper no_zfs" \
  "${CONTAINERD}/cmd/containerd" "${CONTAINERD}/cmd/containerd-shim-runc-v2" "${CONTAINERD}/cmd/ctr"
go_build "${HACK_DIR}/coredns" "${STAGING}/coredns" github.com/coredns/coredns
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}"
