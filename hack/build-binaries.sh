#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, and the real
# node's kubelet and kube-proxy from the pinned
# modules in hack/k8s and hack/etcd into a per-machine cache outside the work tree, once per pinned
# version. A cache built before a binary joined the list is extended with the missing ones only
# (they share Go's build cache, so kube-scheduler alone takes seconds after the others).
# Prints the bin directory on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

require_pin k8s k8s.io/kubernetes "${KUBE_VERSION}"
require_pin etcd go.etcd.io/etcd/server/v3 "${ETCD_VERSION}"

BIN_DIR="${CACHE_ROOT}/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}/bin"
missing=()
for command in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd; do
  [[ -x "${BIN_DIR}/${command}" ]] || missing+=("${command}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit_if_built "${BIN_DIR}" "${BIN_DIR}"
fi

build_begin "${BIN_DIR}" "the control plane binaries" \
  "building ${missing[*]} (Kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION}) into ${BIN_DIR}"

minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
version_flags=()
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  version_flags+=("-X ${p}.gitVersion=${KUBE_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}")
  version_flags+=("-X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z")
done
kube_pkgs=()
for command in "${missing[@]}"; do
  [[ "${command}" == etcd ]] || kube_pkgs+=("k8s.io/kubernetes/cmd/${command}")
done
if [[ ${#kube_pkgs[@]} -gt 0 ]]; then
  go_build --ldflags "${version_flags[*]}" "${HACK_DIR}/k8s" "${STAGING}/" \
    "${kube_pkgs[@]}"
fi
if [[ ! -x "${BIN_DIR}/etcd" ]]; then
  go_build "${HACK_DIR}/etcd" "${STAGING}/etcd" go.etcd.io/etcd/server/v3
fi
install_staged "${BIN_DIR}"

build_end "${BIN_DIR}" "${BIN_DIR}" "${missing[*]}"
