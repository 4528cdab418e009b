#!/usr/bin/env bash
# measure-dense.sh: whole-process figures on the dense node (BENCHMARKS.md).
# Runs `gpuledger simulate` at one simulated second per wall second with
# /metrics served, lets it warm up, scrapes it SCRAPES times (text, then
# OpenMetrics+gzip as Prometheus asks) and reads the kernel's RSS figures.
#   usage: scripts/measure-dense.sh [BIN] [SCENARIO]
set -euo pipefail
BIN=${1:-bin/gpuledger}
SCENARIO=${2:-out/dense/scenario.yaml}
WARMUP=${WARMUP:-60}
SCRAPES=${SCRAPES:-200}
PORT=${PORT:-19602}
OUT=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT

"$BIN" simulate --scenario "$SCENARIO" --out "$OUT" --listen "127.0.0.1:$PORT" --speed 1 >"$OUT/log" 2>&1 &
PID=$!
sleep "$WARMUP"

scrape() { # $@: extra curl args; prints p50 p99 max in ms
  for _ in $(seq "$SCRAPES"); do
    curl -s -o /dev/null -w '%{time_total}\n' "$@" "http://127.0.0.1:$PORT/metrics"
    sleep 0.05
  done | sort -g | awk '{a[NR]=$1*1000} END {printf "p50 %.2f ms  p99 %.2f ms  max %.2f ms  (n=%d)\n", a[int(NR*0.5)], a[int(NR*0.99)], a[NR], NR}'
}
echo "text:             $(scrape)"
echo "openmetrics+gzip: $(scrape --compressed -H 'Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')"
grep -E 'VmRSS|VmHWM|RssAnon|RssFile' "/proc/$PID/status" | tr -s ' \t' ' '
echo "cpu: $(awk '{printf "utime %.1f s stime %.1f s", $14/100, $15/100}' /proc/$PID/stat) over $(ps -o etimes= -p $PID | tr -d ' ') s wall"
