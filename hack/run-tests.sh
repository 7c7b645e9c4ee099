#!/usr/bin/env bash
# make test's runner: the whole suite as two pytest processes side by side.
#
# The real-node tests (marked real_node by tests/conftest.py) share one real node, so they run one
# after another in one process, and most of their time is spent waiting on containers. Every
# other test (unit, test kubelets, the benchmarks' smoke runs) needs no real node and runs in a
# second process beside them, so the suite takes about as long as its longer half. The two never
# share state: each process has its own control plane, temp root and state directories
# (tests/conftest.py, tests/e2e/real_node_fixtures.py).
#
# The real-node process writes to the terminal as it goes; the other's output is kept in
# .local/test-logs/beside-real-node.log (MXJOB_TEST_LOG_DIR names another folder) and printed
# after both ended. Arguments go to both.
# Each process writes its test modules' times to a file of its own there (MXJOB_MODULE_TIMES,
# tests/helpers/module_times.py); the run ends with the slowest modules of the real-node tests,
# the critical path, and the longest module of the others. Those lines never change the status.
# A process whose selection is empty (pytest's exit 5) counts as passed unless both are empty.
#
# MXJOB_FIRST_BUILDS (make test sets it) is a command that makes what the first tests need (the
# control plane's and the node's binaries, the virtualenvs, the images, ruff and mypy): it runs
# first, and its failure ends the run with its status before any test.
#
# MXJOB_LATE_BUILDS (make test sets it) is a command that builds what only some tests need (the
# third-party components, Prometheus): it runs in the background while the first tests run,
# its output in .local/test-logs/late-builds.log. Those tests run last in each process
# (tests/conftest.py, the late_builds marker); one that comes before its build has ended waits
# on the build's lock (hack/lib/build.sh). A failed late build fails the run.
# They run at the tests' own priority, in the order their tests need them (the Makefile's
# LATE_BUILDS): nothing here juggles priorities to fit them around the tests.
#
set -uo pipefail
cd "$(dirname "$0")/.." || exit

pytest=.venv/bin/pytest
python=.venv/bin/python
log_dir=${MXJOB_TEST_LOG_DIR:-.local/test-logs}
beside_log=$log_dir/beside-real-node.log
late_log=$log_dir/late-builds.log
real_node_times=$log_dir/module-times-real-node.json
beside_times=$log_dir/module-times-beside-real-node.json
mkdir -p "$log_dir"

# A selection of the caller's own (-m) decides alone: after the first builds, one process as
# pytest would run it, and nothing built in the background.
own_selection=false
for arg in "$@"; do
  if [[ $arg == -m* ]]; then own_selection=true; fi
done

if [[ -n ${MXJOB_FIRST_BUILDS:-} ]]; then
  bash -c "$MXJOB_FIRST_BUILDS" || exit
fi
if $own_selection; then exec "$pytest" "$@"; fi

late_builds=""
if [[ -n ${MXJOB_LATE_BUILDS:-} ]]; then
  bash -c "$MXJOB_LATE_BUILDS" >"$late_log" 2>&1 &
  late_builds=$!
fi
rm -f "$real_node_times" "$beside_times" # an earlier run's times are not this one's
MXJOB_MODULE_TIMES=$beside_times "$pytest" -m "not real_node" "$@" >"$beside_log" 2>&1 &
beside=$!
MXJOB_MODULE_TIMES=$real_node_times "$pytest" -m real_node "$@" &
real_node=$!
# A stop (Ctrl-C, a CI timeout) reaches all: the tests' conftest tears every plane and node down.
trap 'kill -TERM "$beside" "$real_node" $late_builds 2>/dev/null' INT TERM

# Sets status to the exit status of process $1. wait returns above 128 when a trapped signal
# interrupts it with the child still running: then it is waited for again.
wait_for_status() {
  while true; do
    wait "$1"
    status=$?
    if ((status <= 128)) || ! kill -0 "$1" 2>/dev/null; then return; fi
  done
}

wait_for_status "$real_node"
real_node_status=$status
wait_for_status "$beside"
beside_status=$status
echo "================ the tests beside the real node ($beside_log) ================"
cat "$beside_log"
late_status=0
if [[ -n $late_builds ]]; then
  wait_for_status "$late_builds"
  late_status=$status
  if ((late_status != 0)); then
    echo "================ the late builds failed ($late_log) ================"
    tail -n 40 "$late_log"
  fi
fi
echo "run-tests: real-node tests exited $real_node_status, the tests beside them $beside_status," \
  "the late builds $late_status"
module_times() {
  "$python" -m tests.helpers.module_times "$@" || echo "run-tests: no module times ($*)"
}
module_times report "$real_node_times" --top 10 --label "the real-node tests (the critical path)"
module_times longest "$beside_times" --label "the tests beside them"

if ((late_status != 0)); then exit "$late_status"; fi
if [[ $real_node_status == 5 && $beside_status == 5 ]]; then exit 5; fi
for code in "$real_node_status" "$beside_status"; do
  if [[ $code != 0 && $code != 5 ]]; then exit "$code"; fi
done
exit 0
