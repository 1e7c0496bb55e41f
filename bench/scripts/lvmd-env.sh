#!/bin/bash
# lvmd-env.sh, sourced by run-bench.sh and run-peer.sh (ROOT set): group peer's lvmd.
#
# lvmd_env: when neither LVSTAMP_BENCH_LVMD nor LVSTAMP_BENCH_LVMD_PROTO is set, builds the `lvmd`
# part (test-e2e/parts/build.sh: TopoLVM's lvmd from its Go module, cached outside the repository)
# and exports both; when both are set, exports their real paths (the test VM sees the host's root
# read-only, so a path must be a file on it). Returns 0; 1 when the part could not be built (its
# output is on stderr, its last line exported as LVSTAMP_BENCH_LVMD_ERROR for the group's error);
# 2, with one line on stderr, when only one variable is set, a path is no file or the binary is not
# executable.
lvmd_env() {
  local v dir log rc
  if [ -z "${LVSTAMP_BENCH_LVMD:-}" ] && [ -z "${LVSTAMP_BENCH_LVMD_PROTO:-}" ]; then
    log=$(mktemp)
    dir=$(bash "$ROOT/test-e2e/parts/build.sh" lvmd 2>"$log")
    rc=$?
    cat "$log" >&2
    if [ $rc != 0 ]; then
      LVSTAMP_BENCH_LVMD_ERROR=$(grep -v '^\s*$' "$log" | tail -n 1)
      export LVSTAMP_BENCH_LVMD_ERROR="${LVSTAMP_BENCH_LVMD_ERROR:-test-e2e/parts/build.sh lvmd exited $rc}"
      rm -f "$log"
      return 1
    fi
    rm -f "$log"
    export LVSTAMP_BENCH_LVMD=$dir/lvmd LVSTAMP_BENCH_LVMD_PROTO=$dir/lvmd.proto
  fi
  for v in LVSTAMP_BENCH_LVMD LVSTAMP_BENCH_LVMD_PROTO; do
    if [ -z "${!v:-}" ]; then
      echo "$v is not set (set both LVSTAMP_BENCH_LVMD and LVSTAMP_BENCH_LVMD_PROTO, or neither to use the lvmd part)" >&2
      return 2
    fi
    if [ ! -f "${!v}" ]; then
      echo "$v=${!v}: no such file" >&2
      return 2
    fi
    export "$v=$(realpath "${!v}")"
  done
  if [ ! -x "$LVSTAMP_BENCH_LVMD" ]; then
    echo "LVSTAMP_BENCH_LVMD=$LVSTAMP_BENCH_LVMD: not executable" >&2
    return 2
  fi
}
