#!/usr/bin/env bash
# Builds `cosign` (cmd/cosign) from the module pinned in hack/cosign into a per-machine cache
# outside the work tree, once per pinned version, stamped with its version as the release's
# Makefile stamps it (sigs.k8s.io/release-utils/version). hack/release.sh signs the released
# images with it and attaches their SBOMs; tests/e2e/test_real_node_registry.py verifies them.
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=github.com/sigstore/cosign/v2
require_pin cosign "${MODULE}" "${COSIGN_VERSION}"

BIN_DIR="${CACHE_ROOT}/cosign-${COSIGN_VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/cosign"

build_begin "${BIN_DIR}" cosign "building cosign ${COSIGN_VERSION} into ${BIN_DIR} (first time only)"
go_build --ldflags "-X sigs.k8s.io/release-utils/version.gitVersion=${COSIGN_VERSION} -X sigs.k8s.io/release-utils/version.gitTreeState=clean" \
  "${HACK_DIR}/cosign" "${STAGING}/cosign" "${MODULE}/cmd/cosign"
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/cosign"
