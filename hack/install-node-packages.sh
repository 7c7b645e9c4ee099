#!/usr/bin/env bash
# Installs the Debian packages the real node and the image builds need (runc, the CNI plugins,
# nftables for kube-proxy, buildah and debootstrap for the images), once per machine: a package
# already installed is not fetched again. Needs root, as apt-get does; says so when not root.
set -euo pipefail
# shellcheck source=lib/build.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/build.sh"

PACKAGES=(
  runc                       # the OCI runtime containerd's runc shim calls
  containernetworking-plugins  # bridge, host-local, loopback (/usr/lib/cni)
  nftables                   # the nft command kube-proxy's nftables mode programs rules with
  conntrack                  # kube-proxy clears stale UDP conntrack entries with it
  iproute2                   # ip: the node's bridge and address
  buildah                    # builds the images from the Dockerfiles, no daemon
  debootstrap                # the local Python base image
  fuse-overlayfs             # buildah's overlay storage when the kernel's cannot be used
)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("${package}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  die "the real node needs Debian packages that are not installed: ${missing[*]}." \
    "Installing them needs root: run 'sudo make node-packages' (or as root: make node-packages)."
fi
command -v apt-get >/dev/null \
  || die "apt-get not found: install ${missing[*]} with this system's package manager"
log "installing ${missing[*]}"
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
log "installed in $(( $(date +%s) - start )) s"
