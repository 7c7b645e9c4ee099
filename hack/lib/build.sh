# shellcheck shell=bash source-path=SCRIPTDIR/..
# What the scripts of hack/ share, sourced by each after `set -euo pipefail`: the pinned versions,
# the per-machine cache, the check that a go.mod pins what hack/versions.env names, the stamp that
# makes a second run a no-op, and `go build` with the project's flags. Progress and errors go to
# stderr: a build script's stdout is only its result, which the Python code reads (the last line).
#
# Sets HACK_DIR (this hack/ folder), CACHE_ROOT (the per-machine cache outside the work tree:
# MXJOB_CACHE_DIR, else $XDG_CACHE_HOME/mxjob-operator, else ~/.cache/mxjob-operator) and the
# variables of hack/versions.env.

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=versions.env
source "${HACK_DIR}/versions.env"
# shellcheck disable=SC2034  # used by the scripts that source this
CACHE_ROOT="${MXJOB_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/mxjob-operator}"

# log <line>...: progress, one argument a line, on stderr.
log() { printf '%s\n' "$@" >&2; }

# die <line>...: the lines on stderr, then exit 1.
die() { log "$@"; exit 1; }

# require_pin <module dir of hack/> <module> <version> [<name in the message>]: fail unless
# hack/<module dir>/go.mod requires <module> at <version> (`require M V`, or `M V` in a block).
require_pin() {
  grep -qxF -e "require $2 $3" -e "	$2 $3" "${HACK_DIR}/$1/go.mod" \
    || die "hack/$1/go.mod does not pin ${4:-$2} $3"
}

# exit_if_built <dir> <result>: when <dir> holds a finished build (its stamp, .complete), print
# <result> and exit 0. Otherwise take the build's lock (<dir>.lock, held until this script exits)
# first: a second run of the same build (make test's background builds and a test that needs
# the component) waits for the first, finds its stamp and exits, instead of building beside it.
exit_if_built() {
  if [[ -f "$1/.complete" ]]; then
    echo "$2"
    exit 0
  fi
  mkdir -p "$(dirname "$1")"
  exec {BUILD_LOCK_FD}>"$1.lock"
  if ! flock --nonblock "${BUILD_LOCK_FD}"; then
    log "waiting for the build of $1 that is already running"
    flock "${BUILD_LOCK_FD}"
  fi
  if [[ -f "$1/.complete" ]]; then
    echo "$2"
    exit 0
  fi
}

# build_begin <dir> <what> <message>: start a build into the cache directory <dir>: go must be
# there, the stamp goes, the clock starts, <message> is logged. Sets STAGING, a new directory in
# <dir> removed on exit: what is built goes there first and is moved in whole (install_staged),
# so an interrupted build never leaves a truncated binary behind.
build_begin() {
  command -v go >/dev/null || die "go is required to build $2"
  mkdir -p "$1"
  rm -f "$1/.complete"
  BUILD_START=$(date +%s)
  log "$3"
  STAGING="$(mktemp -d "$1/.staging.XXXXXX")"
  trap 'rm -rf "${STAGING}"' EXIT
}

# go_build [--inlined] [--ldflags <flags>] <module dir> <output> [<go build flag>...] <package>...:
# go build in <module dir> with the project's flags: modules resolved as go.mod says (-mod=mod),
# static (CGO_ENABLED=0), -trimpath, stripped (-ldflags "-s -w", then <flags>). Its output goes to
# stderr.
#
# A cold make test is CPU-bound on two cores, and Go's compiles are most of its CPU
# (docs/development/lab-notes.md, "The CPU of a cold make test"), so the compiler does only the
# work a test needs:
# - no DWARF (-gcflags=all=-dwarf=false): the linker strips it anyway (-w);
# - no inlining (-l), unless --inlined: the same program, built about a fifth faster (helm: 167 s of
#   CPU against 234 s; kube-apiserver: 336 s against 416 s), that runs somewhat slower
#   (kube-apiserver: a plane's start and a small load about 15 % more CPU, a few seconds in a
#   test). The control plane, etcd, the node's containerd and CoreDNS, kwok and the third-party
#   components are built so. training-operator passes --inlined: the benchmarks compare this
#   operator against it, and it must not be slowed.
go_build() {
  local ldflags="-s -w" no_inlining=" -l"
  while [[ "$1" == --* ]]; do
    case "$1" in
      --inlined) no_inlining=""; shift ;;
      --ldflags) ldflags+=" $2"; shift 2 ;;
      *) die "go_build: unknown option $1" ;;
    esac
  done
  local dir="$1" output="$2"
  shift 2
  (cd "${dir}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -gcflags="all=-dwarf=false${no_inlining}" -ldflags "${ldflags}" -o "${output}" "$@") >&2
}

# install_staged <dir>: move everything in STAGING into <dir>.
install_staged() {
  find "${STAGING}" -mindepth 1 -maxdepth 1 -exec mv -t "$1" {} +
}

# build_end <dir> <result> [<what was built>]: log the time since build_begin and record it in
# <dir>/.build-seconds (the file is the number; with <what was built>, a line "<what>: <number>" is
# added instead), stamp <dir> as finished, and print <result>.
build_end() {
  local seconds
  seconds=$(($(date +%s) - BUILD_START))
  log "built in ${seconds} s"
  if (($# > 2)); then
    echo "$3: ${seconds}" >> "$1/.build-seconds"
  else
    echo "${seconds}" > "$1/.build-seconds"
  fi
  touch "$1/.complete"
  echo "$2"
}

# module_dir <module>@<version>: download it into Go's module cache (through the module proxy,
# verified against the checksum database) and print its directory. Run in a module's directory or
# outside any.
module_dir() {
  local json dir
  json="$(GOFLAGS=-mod=mod go mod download -json "$1")"
  dir="$(printf '%s\n' "${json}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -n "${dir}" && -d "${dir}" ]] || die "$1: not downloaded:" "${json}"
  printf '%s\n' "${dir}"
}
