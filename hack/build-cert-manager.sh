#!/usr/bin/env bash
# Builds cert-manager's controller and CA injector (cmd/controller, cmd/cainjector) from the
# release source archive in the third-party folder (THIRD_PARTY_DIR, default ../shared/third_party
# beside the project) into a per-machine cache outside the work tree, once per archive. The
# module proxy does not serve these two commands (each is a module of its own with a `replace` to
# the repository root), which is why the archive exists. Prints the cache directory on stdout:
# bin/controller, bin/cainjector and crds/ (the release's deploy/crds). Progress goes to stderr.
#
# One dependency is refused by the module proxy (github.com/Venafi/vcert/v5: 403); the Venafi
# issuer is its only user, so the build leaves that issuer out: the import that registers it in
# cmd/controller/app/start.go, and its two controllers in the default controller lists of
# internal/apis/config/controller/v1alpha1/defaults.go. Every other issuer (CA, self-signed,
# ACME, Vault) is built as released.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"
THIRD_PARTY_DIR="${THIRD_PARTY_DIR:-${HACK_DIR}/../../shared/third_party}"
ARCHIVE="${THIRD_PARTY_DIR}/cert-manager-${CERT_MANAGER_VERSION}-src.tar.gz"

[[ -f "${ARCHIVE}" ]] || {
  echo "cert-manager's source archive is missing: ${ARCHIVE} (set THIRD_PARTY_DIR)" >&2; exit 1; }

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
digest="$(sha256sum "${ARCHIVE}" | cut -c1-12)"
OUT="${CACHE_ROOT}/cert-manager-${CERT_MANAGER_VERSION}-${digest}"
STAMP="${OUT}/.complete"

if [[ -f "${STAMP}" ]]; then
  echo "${OUT}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build cert-manager" >&2; exit 1; }
mkdir -p "${OUT}"
start=$(date +%s)
echo "building cert-manager ${CERT_MANAGER_VERSION} (controller, cainjector) into ${OUT}" >&2

# Built beside the cache and moved in whole: an interrupted build never leaves a stamp behind.
staging="$(mktemp -d "${OUT}/.staging.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
tar -xzf "${ARCHIVE}" -C "${staging}"
src="${staging}/cert-manager-${CERT_MANAGER_VERSION}"
[[ -d "${src}/cmd/controller" ]] || { echo "${ARCHIVE} has no cmd/controller" >&2; exit 1; }
chmod -R u+w "${src}"

start_go="${src}/cmd/controller/app/start.go"
defaults_go="${src}/internal/apis/config/controller/v1alpha1/defaults.go"
sed -i '\#"github.com/cert-manager/cert-manager/pkg/issuer/venafi"#d' "${start_go}"
sed -i -e '/venaficontroller "github.com\/cert-manager\/cert-manager\/pkg\/controller/d' \
  -e '/venaficontroller\.C[SR]*ControllerName,/d' "${defaults_go}"
if grep -qi venafi "${start_go}" || grep -q venaficontroller "${defaults_go}"; then
  echo "the Venafi issuer is still referenced after the edit; the archive changed?" >&2; exit 1
fi

mkdir -p "${staging}/bin"
for command in controller cainjector; do
  (cd "${src}/cmd/${command}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w" -o "${staging}/bin/${command}" .) >&2
done
cp -r "${src}/deploy/crds" "${staging}/crds"

rm -rf "${OUT}/bin" "${OUT}/crds"
mv "${staging}/bin" "${staging}/crds" "${OUT}/"
end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${OUT}/.build-seconds"
touch "${STAMP}"
echo "${OUT}"
