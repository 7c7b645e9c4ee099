#!/usr/bin/env bash
# Print the PodGroup CRD manifests of the gang schedulers training-operator v1.8.1 supports, one
# path a line: scheduler-plugins' (scheduling.x-k8s.io) then Volcano's (scheduling.volcano.sh).
# The files come from those projects' Go modules at the versions pinned in hack/versions.env,
# downloaded once into the Go module cache through the Go module proxy and verified against the
# Go checksum database: the files the projects ship, no hand-copied YAML in this repository.
# (volcano.sh/apis, the module training-operator imports, has only the Go types; the CRD is in
# volcano.sh/volcano of the same release.)
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

# Outside any module: `go mod download` of a path@version needs no go.mod.
cd "$(mktemp -d)"
trap 'rmdir "$PWD" 2>/dev/null || true' EXIT

plugins="$(module_dir "sigs.k8s.io/scheduler-plugins@${SCHEDULER_PLUGINS_VERSION}")"
volcano="$(module_dir "volcano.sh/volcano@${VOLCANO_VERSION}")"
for file in "${plugins}/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" \
            "${volcano}/config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml"; do
  [[ -f "$file" ]] || die "missing CRD manifest $file"
  printf '%s\n' "$file"
done
