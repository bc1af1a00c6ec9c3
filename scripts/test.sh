#!/usr/bin/env bash
# Sets everything up, builds, runs every test, then the sanitizer job and the format check
# (scripts/check-format.sh: an unformatted file fails the run). Used by the README and by .ci/run.
# Quiet: a line per stage, the build's warnings and errors, and a summary of each test
# run; the output of a failing test (here and in $BUILD/ctest.log).
#
#   BUILD_DIR=build             the build directory
#   SANITIZE_BUILD_DIR=build-asan
#   ARBITER_SKIP_SANITIZE=1     skip the sanitizer job (a quick local run; CI runs it)
#
# The sanitizer job builds the libraries and the scenario, fuzz and trace-reader tests (the
# test_sanitize target) with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DARBITER_SANITIZE=ON; -O0, which compiles in about half the CPU time of -O1) in a separate
# directory and runs them: a leak, an overflow or undefined behaviour fails the run.
#
# The integration tests need real services (Prometheus, ClickHouse, PostgreSQL, Slurm, Kubernetes):
# they are installed here (Debian packages, only the missing ones; Kubernetes built from source
# once per machine) and started and stopped by CTest fixtures (scripts/services/<name>.sh); the
# trap below stops any left running, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
stage() { echo "== $* ($((SECONDS - t0)) s)"; }

./scripts/setup.sh --with-browser
BUILD=${BUILD_DIR:-build}
# kube: the Kubernetes test cluster, built from source the first time on a machine (long; cached
# in ~/.cache/arbiter, then seconds); its fixture runs it in $BUILD/kube-cluster.
SERVICES=(prometheus clickhouse postgres slurm kube)
for s in "${SERVICES[@]}"; do
  [ "$s" = kube ] && stage "install kube (tests/cluster/build.sh)"
  ./scripts/services/$s.sh install
done
# Kueue beside Arbiter on the test cluster (the Kueue* tests): built from source once per machine
# (cached in ~/.cache/arbiter); its fixture runs it on $BUILD/kube-cluster, and kube.sh stop stops it.
stage "install kueue (tests/cluster/kueue/build.sh)"
./scripts/services/kueue.sh install
stop_services() {
  for s in "${SERVICES[@]}"; do
    if [ "$s" = kube ]; then ./scripts/services/kube.sh stop "$BUILD/kube-cluster" >/dev/null 2>&1 || true
    else ./scripts/services/$s.sh stop >/dev/null 2>&1 || true; fi
  done
}
trap stop_services EXIT
stage "build the CLI and the integration tests ($BUILD)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j2 --target test_integration -- --quiet

# The Slurm tests (label "slurm", about 10 minutes) run workloads on Slurm's own clock: they wait,
# and hardly use the CPU. So they run in the background on their own Slurm stack, beside the rest
# of the build and the other tests, which run under `nice` so that Slurm's daemons keep their
# latency. Their output is in $BUILD/slurm-tests.log; their result is waited for at the end.
SLURM_LOG=$BUILD/slurm-tests.log
SLURM_TEST_PID=$BUILD/slurm-tests.pid
run_slurm_tests() {
  if ! ./scripts/services/slurm.sh start; then
    echo "Slurm did not start"
    return 1
  fi
  local rc=0
  timeout 1800 "$BUILD/test_integration" --gtest_filter='Slurm*' &
  echo $! >"$SLURM_TEST_PID"
  wait $! || rc=$?
  ./scripts/services/slurm.sh stop || true
  return $rc
}
stage "Slurm tests: started in the background ($SLURM_LOG)"
run_slurm_tests >"$SLURM_LOG" 2>&1 &
slurm_job=$!
stop_all() {
  [ -f "$SLURM_TEST_PID" ] && kill "$(cat "$SLURM_TEST_PID")" 2>/dev/null || true
  stop_services
}
trap stop_all EXIT

stage "build the rest ($BUILD)"
nice -n 10 cmake --build "$BUILD" -j2 -- --quiet

# ctest: the whole output to a log (with a failing test's output), the summary here; a failure
# prints what the failing tests printed (up to 400 lines) and reruns the failed tests with
# their output, so that a test which fails only under load still leaves its evidence.
run_ctest() {  # DIR LOG [ctest args...]
  local dir=$1 log=$2
  shift 2
  if ctest --test-dir "$dir" -j2 --timeout 900 -Q --output-on-failure --output-log "$log" "$@"; then
    grep -E "tests passed|Total Test time" "$log" | sed 's/^/   /'
  else
    grep -E "tests passed|Total Test time" "$log" | sed 's/^/   /' || true
    echo "   failed:"
    sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ - ' | sed 's/^\s*/     /' || true
    echo "   their output in this run:"
    awk '/\*\*\*(Failed|Timeout|Exception|Not Run)/ { on = 1; n = 0; print; next }
         on && /^ *([0-9]+\/[0-9]+ Test|Start +[0-9]+:)/ { on = 0 }
         on && n++ < 400 { print }' "$log" | tail -n 400 | sed 's/^/     | /' || true
    ctest --test-dir "$dir" --rerun-failed --output-on-failure --timeout 900 "$@" || true
    return 1
  fi
}

# The sanitizer job's build needs the CPU; most tests wait (on services, processes, clocks). So it
# is built beside the tests at the lowest priority (nice 19: it takes only the CPU the tests leave
# idle), and its tests run after the others.
SAN=${SANITIZE_BUILD_DIR:-build-asan}
san_job=
if [ "${ARBITER_SKIP_SANITIZE:-0}" != 1 ]; then
  stage "sanitizer job: ASan+UBSan build ($SAN), in the background beside the tests ($SAN/build.log)"
  mkdir -p "$SAN"
  (cmake -S . -B "$SAN" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" \
         -DARBITER_SANITIZE=ON -DARBITER_BUILD_BENCH=OFF >/dev/null &&
    nice -n 19 cmake --build "$SAN" -j2 --target test_sanitize -- --quiet) >"$SAN/build.log" 2>&1 &
  san_job=$!
fi

stage "tests"
export ARBITER_REQUIRE_CHROMIUM=1  # CI installs Chromium: the render tests must not skip
tests_rc=0
run_ctest "$BUILD" "$BUILD/ctest.log" -LE slurm || tests_rc=$?

if [ -n "$san_job" ]; then
  stage "sanitizer job: waiting for its build"
  if ! wait "$san_job"; then
    echo "   the ASan+UBSan build failed ($SAN/build.log):"
    tail -n 60 "$SAN/build.log"
    exit 1
  fi
  grep -E "warning|error" "$SAN/build.log" | head -n 40 || true
  stage "sanitizer job: scenarios and fuzz tests under ASan+UBSan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_ctest "$SAN" "$SAN/ctest.log" -R '^sanitize:'
fi
[ "$tests_rc" = 0 ] || exit "$tests_rc"
# The format check runs while the Slurm tests may still be waiting on Slurm: the CPU is free then.
stage "format (scripts/check-format.sh, clang-format 14)"
./scripts/check-format.sh
stage "Slurm tests (waiting for the background run)"
if wait "$slurm_job"; then
  grep -E '^\[  PASSED  \]|tests ran' "$SLURM_LOG" | sed 's/^/   /'
else
  echo "   failed ($SLURM_LOG):"
  grep -E '^\[  (FAILED|PASSED)  \]|Failure|tests ran|did not start' "$SLURM_LOG" | sed 's/^/     /' || true
  tail -n 60 "$SLURM_LOG"
  exit 1
fi
stage "done"
