#!/usr/bin/env bash
# Builds kwok's `kwok` controller (cmd/kwok; not kwokctl, which drives Docker) from the module
# pinned in hack/kwok into a per-machine cache outside the work tree, once per pinned version.
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MODULE=sigs.k8s.io/kwok
require_pin kwok "${MODULE}" "${KWOK_VERSION}"

BIN_DIR="${CACHE_ROOT}/kwok-${KWOK_VERSION}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/kwok"

build_begin "${BIN_DIR}" kwok "building kwok ${KWOK_VERSION} into ${BIN_DIR} (first time only)"
go_build "${HACK_DIR}/kwok" "${STAGING}/kwok" "${MODULE}/cmd/kwok"
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/kwok"
