#!/usr/bin/env bash
# Print the directory holding cert-manager's own CRD manifests (deploy/crds/*.yaml) of the pinned
# release. The files come from the cert-manager Go module, downloaded once into the Go module
# cache through the Go module proxy and verified against the Go checksum database: the same
# files cert-manager's release ships, with no hand-copied YAML in this repository.
# Used by tests/e2e/test_install_overlays.py to install the CRDs before the cert-manager overlay.
set -euo pipefail

CERT_MANAGER_VERSION="${CERT_MANAGER_VERSION:-v1.21.2}"

# Outside any module: `go mod download` of a path@version needs no go.mod.
cd "$(mktemp -d)"
trap 'rmdir "$PWD" 2>/dev/null || true' EXIT
json="$(GOFLAGS=-mod=mod go mod download -json "github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}")"
dir="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "$dir" || ! -d "$dir/deploy/crds" ]]; then
    printf 'cert-manager %s: no deploy/crds in the downloaded module:\n%s\n' \
        "$CERT_MANAGER_VERSION" "$json" >&2
    exit 1
fi
printf '%s\n' "$dir/deploy/crds"
