#!/bin/bash
# Stop what start.sh RUN_DIR started, by PID only. --wipe also removes RUN_DIR.
RUN=${1:?usage: stop.sh RUN_DIR [--wipe]}
for n in apiserver etcd; do
  if [ -f "$RUN/$n.pid" ]; then
    pid=$(cat "$RUN/$n.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    rm -f "$RUN/$n.pid"
  fi
done
[ "${2:-}" = "--wipe" ] && rm -rf "$RUN"
true
