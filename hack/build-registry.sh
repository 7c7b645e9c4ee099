#!/usr/bin/env bash
# Builds the CNCF distribution `registry` (cmd/registry) from the module pinned in hack/registry
# into a per-machine cache outside the work tree, once per pinned version, stamped with its
# version as the release's Makefile stamps it. tests/e2e/test_real_node_registry.py serves it over
# TLS on loopback and pushes the released images and chart to it (localkube.registry). Prints the
# binary's path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=github.com/distribution/distribution/v3
require_pin registry "${MODULE}" "${DISTRIBUTION_VERSION}"

BIN_DIR="${CACHE_ROOT}/registry-${DISTRIBUTION_VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/registry"

build_begin "${BIN_DIR}" registry \
  "building the distribution registry ${DISTRIBUTION_VERSION} into ${BIN_DIR} (first time only)"
go_build --ldflags "-X ${MODULE}/version.version=${DISTRIBUTION_VERSION}" \
  "${HACK_DIR}/registry" "${STAGING}/registry" "${MODULE}/cmd/registry"
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/registry"
