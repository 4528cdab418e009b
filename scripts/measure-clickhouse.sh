#!/usr/bin/env bash
# measure-clickhouse.sh: the memory of a ClickHouse server running the Helm
# chart's bundled configuration (the ConfigMap's config.xml and users.xml,
# data path and ports moved by a config.d file) under an insert load:
# BenchmarkInsert of ledger/clickhouse (a 100-GPU fleet's 1-minute rows,
# batches of 10,000 to 500,000 rows) run against it. Prints the server's
# VmHWM (peak RSS), VmRSS and RssAnon sampled every second.
#   scripts/measure-clickhouse.sh [benchtime]     default 20x
# Needs clickhouse-server (Debian's is 18.16) and helm (scripts/tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
HELM=${HELM:-$(scripts/tools.sh helm)}
benchtime=${1:-20x}
dir=$(mktemp -d /tmp/gpuledger-chmeasure.XXXXXX)
chmod 755 "$dir"
mkdir -p "$dir/etc/config.d" "$dir/data"
"$HELM" template gpuledger deploy/helm/gpuledger --namespace gpuledger \
	--show-only templates/clickhouse-configmap.yaml >"$dir/cm.yaml"
python3 - "$dir" <<'PY'
import sys, yaml
d = sys.argv[1]
cm = yaml.safe_load(open(d + "/cm.yaml"))
for name, text in cm["data"].items():
    open(f"{d}/etc/{name}", "w").write(text)
PY
read -r tcp http < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
cat >"$dir/etc/config.d/paths.xml" <<XML
<clickhouse>
  <tcp_port>$tcp</tcp_port>
  <http_port>$http</http_port>
  <path>$dir/data/</path>
  <tmp_path>$dir/data/tmp/</tmp_path>
  <user_files_path>$dir/data/user_files/</user_files_path>
  <format_schema_path>$dir/data/format_schemas/</format_schema_path>
</clickhouse>
XML
pw=measure-only-password
sha=$(printf '%s' "$pw" | sha256sum | cut -d' ' -f1)
CLICKHOUSE_GPULEDGER_PASSWORD_SHA256=$sha clickhouse-server --config-file="$dir/etc/config.xml" >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$http/ping" >/dev/null && break; sleep 0.2; done
grep -E 'VmRSS|RssAnon' /proc/$pid/status | tr -s ' ' | paste -sd' ' | sed 's/^/idle: /'
( while kill -0 $pid 2>/dev/null; do grep -E '^(VmRSS|RssAnon)' /proc/$pid/status | awk '{print $2}' | paste -sd' '; sleep 1; done ) >"$dir/samples" &
sampler=$!
GPULEDGER_TEST_CLICKHOUSE_DSN="clickhouse://gpuledger:$pw@127.0.0.1:$tcp/" \
	go test -run '^$' -bench BenchmarkInsert -benchtime "$benchtime" -timeout 60m ./ledger/clickhouse | grep -E 'Benchmark|ok'
kill $sampler 2>/dev/null || true
# Disk per ledger row after the inserts (active parts of every ledger table).
curl -s "http://127.0.0.1:$http/?user=gpuledger&password=$pw" --data-binary \
	"SELECT sum(rows) AS ledger_rows, sum(bytes_on_disk) AS bytes, round(bytes / ledger_rows, 1) AS bytes_per_row FROM system.parts WHERE active AND table = 'ledger_rows' FORMAT Vertical"
sort -n "$dir/samples" | tail -1 | awk '{printf "max sampled VmRSS %.0f MiB\n", $1/1024}'
sort -k2 -n "$dir/samples" | tail -1 | awk '{printf "max sampled RssAnon %.0f MiB\n", $2/1024}'
grep -E 'VmHWM|VmRSS|RssAnon' /proc/$pid/status | tr -s ' ' | paste -sd' ' | sed 's/^/after: /'
