#!/usr/bin/env bash
# `make release REGISTRY=<host:port/prefix> [RELEASE_CA=<CA file>] [RELEASE_OUT=<dir>]`: builds the
# webhook and controller images (the cached build of `make images`), pushes them to REGISTRY,
# signs each by digest with cosign (a key pair made here), attaches its CycloneDX SBOM as a signed
# attestation, writes the digests into the chart (images.<name>.digest) and a kustomize overlay,
# and pushes the chart to oci://REGISTRY/charts (localkube.scenarios.release). Needs root
# (buildah's storage). Output: RELEASE_OUT (.local/release): cosign.key/.pub, the SBOMs,
# overlay/kustomization.yaml and release.json.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

[[ -n "${REGISTRY:-}" ]] || die "usage: make release REGISTRY=<host:port/prefix> [RELEASE_CA=<file>]"
args=(--registry "${REGISTRY}")
[[ -z "${RELEASE_CA:-}" ]] || args+=(--ca-file "${RELEASE_CA}")
[[ -z "${RELEASE_OUT:-}" ]] || args+=(--out "${RELEASE_OUT}")
cd "${HACK_DIR}/.."
exec .venv/bin/python -m localkube.scenarios.release "${args[@]}"
