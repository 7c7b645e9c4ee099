#!/usr/bin/env bash
# Builds kubeflow training-operator (cmd/training-operator.v1) from the module pinned in
# hack/training-operator into a per-machine cache outside the work tree, once per pinned version
# (and set of patches). Prints the binary's path on stdout; progress goes to stderr.
#
# Usage: hack/build-training-operator.sh [PATCH...]
# Without arguments it builds the release as its users ran it. Each PATCH names a file of
# hack/training-operator/patches/ (e.g. client-rate-limits.patch, which bench/ uses for the
# operator at its best); they are applied, in the order given, to a copy of the module's source,
# which the build then uses through a `replace` in a copy of go.mod. Their digest is part of the
# cache key, so a patched build has a cache directory of its own and changing a patch rebuilds.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

MOD_DIR="${HACK_DIR}/training-operator"
MODULE=github.com/kubeflow/training-operator
require_pin training-operator "${MODULE}" "${TRAINING_OPERATOR_VERSION}"

patches=()
for name in "$@"; do
  [[ -f "${MOD_DIR}/patches/${name}" ]] || die "no patch hack/training-operator/patches/${name}"
  patches+=("${MOD_DIR}/patches/${name}")
done
key="${TRAINING_OPERATOR_VERSION}"
if ((${#patches[@]})); then
  key+="-$(cat "${patches[@]}" | sha256sum | cut -c1-12)"
fi

BIN_DIR="${CACHE_ROOT}/training-operator-${key}/bin"
exit_if_built "${BIN_DIR}" "${BIN_DIR}/training-operator"

build_begin "${BIN_DIR}" training-operator \
  "building training-operator ${key} into ${BIN_DIR} (first time only)"
modfile=()
if ((${#patches[@]})); then
  work="${BIN_DIR}/../src"
  rm -rf "${work}"
  mkdir -p "${work}"
  src="$(cd "${MOD_DIR}" && module_dir "${MODULE}@${TRAINING_OPERATOR_VERSION}")"
  cp -r "${src}/." "${work}/"
  chmod -R u+w "${work}"
  for patch in "${patches[@]}"; do
    log "applying $(basename "${patch}")"
    patch -d "${work}" -p1 --quiet < "${patch}"
  done
  cp "${MOD_DIR}/go.mod" "${work}/build.mod"
  cp "${MOD_DIR}/go.sum" "${work}/build.sum"
  (cd "${MOD_DIR}" && go mod edit -modfile="${work}/build.mod" -replace "${MODULE}=${work}")
  modfile=(-modfile="${work}/build.mod")
fi
go_build --inlined "${MOD_DIR}" "${STAGING}/training-operator" "${modfile[@]}" \
  "${MODULE}/cmd/training-operator.v1"
install_staged "${BIN_DIR}"
build_end "${BIN_DIR}" "${BIN_DIR}/training-operator"
