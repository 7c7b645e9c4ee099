#!/usr/bin/env bash
# Builds the programs of a third-party component from its release source archive in the
# third-party folder (THIRD_PARTY_DIR, default ../shared/third_party beside the project) into a
# per-machine cache outside the work tree, once per archive. The module proxy does not serve these
# programs (their commands are modules of their own, or their release is an image), which is why
# the archives exist. Prints the cache directory on stdout: bin/<program>... and the component's
# manifests (cert-manager: crds/; kueue: config/; katib: manifests/). Progress goes to stderr.
#
# Usage: hack/build-third-party.sh cert-manager|kueue|kueue-current|volcano|katib
#
# cert-manager: cmd/controller and cmd/cainjector. One dependency is refused by the module proxy
# (github.com/Venafi/vcert/v5: 403); the Venafi issuer is its only user, so the build leaves that
# issuer out: the import that registers it in cmd/controller/app/start.go, and its two controllers
# in the default lists of internal/apis/config/controller/v1alpha1/defaults.go. Every other
# issuer (CA, self-signed, ACME, Vault) is built as released.
# kueue: cmd/kueue, as released (v0.10 is the last line with the MXJob integration).
# kueue-current: the same for the newest Kueue (KUEUE_CURRENT_VERSION): its archive is named
# kueue-<version>, its cache kueue-current-<version>-<hash> so the two never share a folder.
# volcano: cmd/scheduler (vc-scheduler) and cmd/controller-manager (its queue and PodGroup
# controllers), as released, in one go build so they share the compiled packages; its CRDs from
# config/crd/volcano/bases and installer/ (the released scheduler configuration and RBAC).
# katib: its four Go programs, as released (static, CGO off, as Katib's Dockerfiles build them):
# cmd/katib-controller/v1beta1 (katib-controller), cmd/db-manager/v1beta1 (katib-db-manager),
# cmd/suggestion/goptuna/v1beta1 (goptuna-suggestion) and
# cmd/metricscollector/v1beta1/file-metricscollector; one go build each (three of the packages
# are named v1beta1, so one -o folder cannot hold them), sharing Go's build cache. Its
# manifests/v1beta1 (components and installs) as manifests/.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"
THIRD_PARTY_DIR="${THIRD_PARTY_DIR:-${HACK_DIR}/../../shared/third_party}"

name="${1:-}"
case "${name}" in
  cert-manager) version="${CERT_MANAGER_VERSION}" ;;
  kueue) version="${KUEUE_VERSION}" ;;
  kueue-current) version="${KUEUE_CURRENT_VERSION}"; project=kueue ;;
  volcano) version="${VOLCANO_RELEASE_VERSION}" ;;
  katib) version="${KATIB_VERSION}" ;;
  *) log "usage: $0 cert-manager|kueue|kueue-current|volcano|katib"; exit 2 ;;
esac
# The project whose archive this is: the name itself, except for a second release line of one.
project="${project:-${name}}"
ARCHIVE="${THIRD_PARTY_DIR}/${project}-${version}-src.tar.gz"
[[ -f "${ARCHIVE}" ]] || die "${name}'s source archive is missing: ${ARCHIVE} (set THIRD_PARTY_DIR)"

OUT="${CACHE_ROOT}/${name}-${version}-$(sha256sum "${ARCHIVE}" | cut -c1-12)"
exit_if_built "${OUT}" "${OUT}"

build_begin "${OUT}" "${name}" "building ${name} ${version} into ${OUT} (first time only)"
tar -xzf "${ARCHIVE}" -C "${STAGING}"
src="${STAGING}/${project}-${version}"
chmod -R u+w "${src}"
bin="${STAGING}/bin"
mkdir -p "${bin}"

case "${name}" in
  cert-manager)
    start_go="${src}/cmd/controller/app/start.go"
    defaults_go="${src}/internal/apis/config/controller/v1alpha1/defaults.go"
    sed -i '\#"github.com/cert-manager/cert-manager/pkg/issuer/venafi"#d' "${start_go}"
    sed -i -e '/venaficontroller "github.com\/cert-manager\/cert-manager\/pkg\/controller/d' \
      -e '/venaficontroller\.C[SR]*ControllerName,/d' "${defaults_go}"
    if grep -qi venafi "${start_go}" || grep -q venaficontroller "${defaults_go}"; then
      die "the Venafi issuer is still referenced after the edit; the archive changed?"
    fi
    for command in controller cainjector; do
      go_build "${src}/cmd/${command}" "${bin}/${command}" .
    done
    cp -r "${src}/deploy/crds" "${STAGING}/crds"
    ;;
  kueue | kueue-current)
    go_build "${src}" "${bin}/kueue" ./cmd/kueue
    cp -r "${src}/config" "${STAGING}/config"
    ;;
  volcano)
    go_build "${src}" "${bin}/" ./cmd/scheduler ./cmd/controller-manager
    mv "${bin}/scheduler" "${bin}/vc-scheduler"
    mv "${bin}/controller-manager" "${bin}/vc-controller-manager"
    cp -r "${src}/config/crd/volcano/bases" "${STAGING}/crds"
    mkdir -p "${STAGING}/config"
    cp "${src}/installer/volcano-development.yaml" "${STAGING}/config/"
    ;;
  katib)
    for program in katib-controller:katib-controller/v1beta1 katib-db-manager:db-manager/v1beta1 \
      goptuna-suggestion:suggestion/goptuna/v1beta1 \
      file-metricscollector:metricscollector/v1beta1/file-metricscollector; do
      go_build "${src}" "${bin}/${program%%:*}" "./cmd/${program#*:}"
    done
    cp -r "${src}/manifests/v1beta1" "${STAGING}/manifests"
    ;;
esac

# The staging directory also holds the extracted source: only what was made moves in.
rm -rf "${OUT:?}/bin" "${OUT:?}/crds" "${OUT:?}/config" "${OUT:?}/manifests"
for made in bin crds config manifests; do
  [[ -e "${STAGING}/${made}" ]] && mv "${STAGING}/${made}" "${OUT}/"
done
build_end "${OUT}" "${OUT}"
