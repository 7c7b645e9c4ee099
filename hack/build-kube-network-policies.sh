#!/usr/bin/env bash
# Builds kube-network-policies (its main package is the module's cmd/, a host process that enforces
# NetworkPolicy with nftables and nfqueue) from the module pinned in hack/kube-network-policies
# into a per-machine cache outside the work tree, once per pinned version. The real-node tests of
# network policies run it beside the kubelet (localkube.thirdparty.network_policies). Prints the
# binary's path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=sigs.k8s.io/kube-network-policies
require_pin kube-network-policies "${MODULE}" "${KUBE_NETWORK_POLICIES_VERSION}"

BIN_DIR="${CACHE_ROOT}/kube-network-policies-${KUBE_NETWORK_POLICIES_VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/kube-network-policies"

build_begin "${BIN_DIR}" kube-network-policies \
  "building kube-network-policies ${KUBE_NETWORK_POLICIES_VERSION} into ${BIN_DIR} (first time only)"
go_build "${HACK_DIR}/kube-network-policies" "${STAGING}/kube-network-policies" "${MODULE}/cmd"
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/kube-network-policies"
