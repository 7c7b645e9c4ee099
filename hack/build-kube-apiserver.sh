#!/usr/bin/env bash
# Builds kube-apiserver of another Kubernetes release than the pinned one (hack/versions.env's
# KUBE_VERSION): the oldest the install supports and the newest, for `make test-kube-versions`
# (localkube.scenarios.kube_versions), which runs the local plane with it. Each release is a
# module of its own, hack/kube-apiserver/<version>/ (go.mod pins k8s.io/kubernetes at <version>
# and replaces every staging module by its v0.X.Y release, as hack/k8s does), built once per
# machine into the per-machine cache. Usage: hack/build-kube-apiserver.sh v1.28.15
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

VERSION="${1:?usage: $0 <version, e.g. v1.28.15> (one of hack/kube-apiserver/)}"
[[ -d "${HACK_DIR}/kube-apiserver/${VERSION}" ]] \
  || die "no module for kube-apiserver ${VERSION}: hack/kube-apiserver/ has $(ls "${HACK_DIR}/kube-apiserver")"
require_pin "kube-apiserver/${VERSION}" k8s.io/kubernetes "${VERSION}"

BIN_DIR="${CACHE_ROOT}/kube-apiserver-${VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/kube-apiserver"

build_begin "${BIN_DIR}" "kube-apiserver ${VERSION}" \
  "building kube-apiserver ${VERSION} into ${BIN_DIR} (first time only: about 6 minutes)"
minor="${VERSION#v1.}"; minor="${minor%%.*}"
flags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  flags+=" -X ${p}.gitVersion=${VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor}"
  flags+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
done
go_build --ldflags "${flags}" "${HACK_DIR}/kube-apiserver/${VERSION}" \
  "${STAGING}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/kube-apiserver"
