#!/bin/sh
# Regenerates the README's screenshot, docs/report-screenshot.png, from the
# HTML chargeback report the demo really writes (its fleet, period, models
# and the shipped deploy/prices.yaml), with headless Chromium.
#
#   scripts/report-screenshot.sh            # 30 days, into docs/
#   DAYS=2 SHOT=/tmp/shot.png scripts/report-screenshot.sh
set -eu
cd "$(dirname "$0")/.."
days=${DAYS:-30}
shot=${SHOT:-docs/report-screenshot.png}
case $shot in /*) ;; *) shot=$PWD/$shot ;; esac
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$chromium" ]; then
	echo "report-screenshot: chromium not found (apt-get install chromium)" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gpuledger" ./cmd/gpuledger
"$work/gpuledger" demo --out "$work/demo" --days "$days" --listen '' >/dev/null 2>"$work/demo.log" ||
	{ cat "$work/demo.log" >&2; exit 1; }
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage \
	--user-data-dir="$work/profile" --window-size=1280,2000 \
	--screenshot="$shot" "file://$work/demo/chargeback.html" >"$work/chromium.log" 2>&1 ||
	{ cat "$work/chromium.log" >&2; exit 1; }
echo "wrote $shot from the demo's $days-day chargeback report"
