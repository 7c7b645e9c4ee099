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

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD_DIR="${HACK_DIR}/training-operator"
MODULE=github.com/kubeflow/training-operator
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

grep -q "^require ${MODULE} ${TRAINING_OPERATOR_VERSION}\$" "${MOD_DIR}/go.mod" || {
  echo "hack/training-operator/go.mod does not pin ${MODULE} ${TRAINING_OPERATOR_VERSION}" >&2; exit 1; }

patches=()
for name in "$@"; do
  [[ -f "${MOD_DIR}/patches/${name}" ]] || { echo "no patch hack/training-operator/patches/${name}" >&2; exit 1; }
  patches+=("${MOD_DIR}/patches/${name}")
done
key="${TRAINING_OPERATOR_VERSION}"
if ((${#patches[@]})); then
  key+="-$(cat "${patches[@]}" | sha256sum | cut -c1-12)"
fi

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
BIN_DIR="${CACHE_ROOT}/training-operator-${key}/bin"
BINARY="${BIN_DIR}/training-operator"
STAMP="${BIN_DIR}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${BINARY}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build training-operator" >&2; exit 1; }
mkdir -p "${BIN_DIR}"
start=$(date +%s)
echo "building training-operator ${key} into ${BIN_DIR} (first time only)" >&2

modfile=()
if ((${#patches[@]})); then
  work="${BIN_DIR}/../src"
  rm -rf "${work}"
  mkdir -p "${work}"
  src="$(cd "${MOD_DIR}" && GOFLAGS=-mod=mod go mod download -json "${MODULE}@${TRAINING_OPERATOR_VERSION}" \
    | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  cp -r "${src}/." "${work}/"
  chmod -R u+w "${work}"
  for patch in "${patches[@]}"; do
    echo "applying $(basename "${patch}")" >&2
    patch -d "${work}" -p1 --quiet < "${patch}"
  done
  cp "${MOD_DIR}/go.mod" "${work}/build.mod"
  cp "${MOD_DIR}/go.sum" "${work}/build.sum"
  (cd "${MOD_DIR}" && go mod edit -modfile="${work}/build.mod" -replace "${MODULE}=${work}")
  modfile=(-modfile="${work}/build.mod")
fi

(cd "${MOD_DIR}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build "${modfile[@]}" -trimpath -ldflags "-s -w" \
  -o "${BINARY}" "${MODULE}/cmd/training-operator.v1") >&2

end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${BIN_DIR}/.build-seconds"
touch "${STAMP}"
echo "${BINARY}"
