#!/usr/bin/env bash
# Builds kwok's `kwok` controller (cmd/kwok; not kwokctl, which drives Docker) from the module
# pinned in hack/kwok into a per-machine cache outside the work tree, once per pinned version.
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD_DIR="${HACK_DIR}/kwok"
MODULE=sigs.k8s.io/kwok
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"

grep -q "^require ${MODULE} ${KWOK_VERSION}\$" "${MOD_DIR}/go.mod" || {
  echo "hack/kwok/go.mod does not pin ${MODULE} ${KWOK_VERSION}" >&2; exit 1; }

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
BIN_DIR="${CACHE_ROOT}/kwok-${KWOK_VERSION}/bin"
BINARY="${BIN_DIR}/kwok"
STAMP="${BIN_DIR}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${BINARY}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build kwok" >&2; exit 1; }
mkdir -p "${BIN_DIR}"
start=$(date +%s)
echo "building kwok ${KWOK_VERSION} into ${BIN_DIR} (first time only)" >&2

# Built beside the cache and moved in whole, so an interrupted build never leaves a truncated
# binary behind a stamp.
staging="$(mktemp -d "${BIN_DIR}/.staging.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
(cd "${MOD_DIR}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w" \
  -o "${staging}/kwok" "${MODULE}/cmd/kwok") >&2
mv "${staging}/kwok" "${BINARY}"

end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${BIN_DIR}/.build-seconds"
touch "${STAMP}"
echo "${BINARY}"
