#!/usr/bin/env bash
# Builds the programs of a third-party component from its release source archive in the
# third-party folder (THIRD_PARTY_DIR, default ../shared/third_party beside the project) into a
# per-machine cache outside the work tree, once per archive. The module proxy does not serve these
# programs (their commands are modules of their own, or their release is an image), which is why
# the archives exist. Prints the cache directory on stdout: bin/<program>... and the component's
# manifests (cert-manager: crds/; kueue: config/). Progress goes to stderr.
#
# Usage: hack/build-third-party.sh cert-manager|kueue|volcano
#
# cert-manager: cmd/controller and cmd/cainjector. One dependency is refused by the module proxy
# (github.com/Venafi/vcert/v5: 403); the Venafi issuer is its only user, so the build leaves that
# issuer out: the import that registers it in cmd/controller/app/start.go, and its two controllers
# in the default lists of internal/apis/config/controller/v1alpha1/defaults.go. Every other
# issuer (CA, self-signed, ACME, Vault) is built as released.
# kueue: cmd/kueue, as released (v0.10 is the last line with the MXJob integration).
# volcano: cmd/scheduler (vc-scheduler) and cmd/controller-manager (its queue and PodGroup
# controllers), as released, in one go build so they share the compiled packages; its CRDs from
# config/crd/volcano/bases and installer/ (the released scheduler configuration and RBAC).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"
THIRD_PARTY_DIR="${THIRD_PARTY_DIR:-${HACK_DIR}/../../shared/third_party}"

name="${1:-}"
case "${name}" in
  cert-manager) version="${CERT_MANAGER_VERSION}" ;;
  kueue) version="${KUEUE_VERSION}" ;;
  volcano) version="${VOLCANO_RELEASE_VERSION}" ;;
  *) echo "usage: $0 cert-manager|kueue|volcano" >&2; exit 2 ;;
esac
ARCHIVE="${THIRD_PARTY_DIR}/${name}-${version}-src.tar.gz"
[[ -f "${ARCHIVE}" ]] || {
  echo "${name}'s source archive is missing: ${ARCHIVE} (set THIRD_PARTY_DIR)" >&2; exit 1; }

CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"
OUT="${CACHE_ROOT}/${name}-${version}-$(sha256sum "${ARCHIVE}" | cut -c1-12)"
if [[ -f "${OUT}/.complete" ]]; then
  echo "${OUT}"
  exit 0
fi

command -v go >/dev/null || { echo "go is required to build ${name}" >&2; exit 1; }
mkdir -p "${OUT}"
start=$(date +%s)
echo "building ${name} ${version} into ${OUT} (first time only)" >&2

# Built beside the cache and moved in whole: an interrupted build never leaves a stamp behind.
staging="$(mktemp -d "${OUT}/.staging.XXXXXX")"
trap 'rm -rf "${staging}"' EXIT
tar -xzf "${ARCHIVE}" -C "${staging}"
src="${staging}/${name}-${version}"
chmod -R u+w "${src}"
mkdir -p "${staging}/bin"

go_build() {  # go_build <module dir> <package> <output name>
  (cd "$1" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "${staging}/bin/$3" "$2") >&2
}

case "${name}" in
  cert-manager)
    start_go="${src}/cmd/controller/app/start.go"
    defaults_go="${src}/internal/apis/config/controller/v1alpha1/defaults.go"
    sed -i '\#"github.com/cert-manager/cert-manager/pkg/issuer/venafi"#d' "${start_go}"
    sed -i -e '/venaficontroller "github.com\/cert-manager\/cert-manager\/pkg\/controller/d' \
      -e '/venaficontroller\.C[SR]*ControllerName,/d' "${defaults_go}"
    if grep -qi venafi "${start_go}" || grep -q venaficontroller "${defaults_go}"; then
      echo "the Venafi issuer is still referenced after the edit; the archive changed?" >&2; exit 1
    fi
    for command in controller cainjector; do
      go_build "${src}/cmd/${command}" . "${command}"
    done
    cp -r "${src}/deploy/crds" "${staging}/crds"
    ;;
  kueue)
    go_build "${src}" ./cmd/kueue kueue
    cp -r "${src}/config" "${staging}/config"
    ;;
  volcano)
    (cd "${src}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
      -o "${staging}/bin/" ./cmd/scheduler ./cmd/controller-manager) >&2
    mv "${staging}/bin/scheduler" "${staging}/bin/vc-scheduler"
    mv "${staging}/bin/controller-manager" "${staging}/bin/vc-controller-manager"
    cp -r "${src}/config/crd/volcano/bases" "${staging}/crds"
    mkdir -p "${staging}/config"
    cp "${src}/installer/volcano-development.yaml" "${staging}/config/"
    ;;
esac

rm -rf "${OUT}/bin" "${OUT}/crds" "${OUT}/config"
for made in bin crds config; do
  [[ -e "${staging}/${made}" ]] && mv "${staging}/${made}" "${OUT}/"
done
end=$(date +%s)
echo "built in $((end - start)) s" >&2
echo "$((end - start))" > "${OUT}/.build-seconds"
touch "${OUT}/.complete"
echo "${OUT}"
