#!/usr/bin/env bash
# deps.sh: installs the Debian packages the integration tests use, the
# project's one list of them (make deps and .ci/run call it). What is
# already there is not installed again; --list prints the list and exits.
#
# The packages' own services are not started (the tests run their own
# servers on loopback with temporary data directories). helm, etcd,
# kube-apiserver and kubectl are not Debian packages here: make test builds
# pinned versions into the Go tool cache once (scripts/tools.sh,
# scripts/kube-tools.sh; about 10 minutes cold on 2 cores).
#
# The second ClickHouse engine the tests compare against 18.16 (chDB, the
# ClickHouse 26.7 engine as a shared library: internal/chdbtest) is not a
# Debian package either: deps.sh fetches its pinned npm tarball with
# `npm pack`, checks its SHA-256 and unpacks libchdb.so into
#   ${GPULEDGER_TOOLS_DIR:-$(go env GOCACHE)/../gpuledger-tools}/chdb-<version>/
# once (178 MB download, 566 MB unpacked). `deps.sh --chdb` does only that,
# without root (make unit runs it, so that a fresh tool cache gets it).
#
# axe-core, the accessibility checker the serve pages' Chromium test
# injects through the DevTools protocol (cmd/gpuledger), comes the same
# way: its pinned npm tarball, checked by SHA-256, unpacked to
#   <tool cache>/axe-core-<version>/axe.min.js
# (`deps.sh --axe`, no root; 0.6 MB).
set -euo pipefail

CHDB_PACKAGE=@chdb/lib-linux-x64-gnu
CHDB_VERSION=26.7.3-stable.1
CHDB_SHA256=c0d32b129e988f2b9a9a31c9141aecf5e1e2453f9a079efc4d36ab8e3f92b2ad

AXE_PACKAGE=axe-core
AXE_VERSION=4.10.3
AXE_SHA256=0f2b4d7dcdf7d1219df8d1959ad68e565f51d14c3f0d88bb71cd59abeb956292

# Each line, " :: " between the fields: a shell check that is true when
# the package is present, the packages that bring it, what uses it.
checks=(
  "command -v clickhouse-server :: clickhouse-server clickhouse-client :: the ClickHouse ledger tests (ledger/clickhouse)"
  "command -v prometheus && command -v promtool :: prometheus :: alert rules and the e2e scrape (alerts, e2e)"
  "command -v chromium :: chromium fonts-dejavu-core :: the HTML report's rendering and screenshots (billing/report, cmd/gpuledger)"
  "command -v python3 :: python3 :: the ledger scorer's cross-check in .ci/run"
  "[ -e /usr/share/java/zookeeper.jar ] && command -v java :: zookeeper :: the two-shard ClickHouse cluster test (ZooKeeper for Replicated tables)"
  "command -v buildah :: buildah :: the container image build test (deploy/image)"
  "command -v podman :: podman :: importing the image's base (deploy/image)"
  "[ -x /usr/sbin/debootstrap ] || command -v debootstrap :: debootstrap :: building the image's Debian base (deploy/image)"
  "command -v etcd :: etcd-server :: the Kubernetes control-plane tests (internal/kubetest, e2e/kube)"
  "command -v npm :: nodejs npm :: fetching the chDB engine, ClickHouse 26.7 (internal/chdbtest, internal/chdbcompat, dashboards/chcheck), and axe-core (cmd/gpuledger)"
)

# toolcache is the tool cache's directory.
toolcache() {
  if [ -n "${GPULEDGER_TOOLS_DIR:-}" ]; then
    echo "$GPULEDGER_TOOLS_DIR"
  elif command -v "${GO:-go}" >/dev/null 2>&1; then
    echo "$(dirname "$("${GO:-go}" env GOCACHE)")/gpuledger-tools"
  else
    echo "$HOME/.cache/gpuledger-tools"
  fi
}

# npm_fetch NAME PACKAGE VERSION SHA256 FILE fetches FILE of the pinned
# npm tarball PACKAGE@VERSION into <tool cache>/NAME-VERSION/ unless it is
# there already. The tarball is checked before anything is unpacked, and
# the file is moved into place whole, so an interrupted run leaves nothing
# that a test would load.
npm_fetch() {
  local name=$1 package=$2 version=$3 want=$4 file=$5 tools dir out tmp sum
  tools=$(toolcache)
  dir=$tools/$name-$version
  out=$dir/$file
  if [ -s "$out" ]; then
    echo "deps: $name $version is in $dir"
    return 0
  fi
  echo "deps: fetching $name $version ($package) into $dir"
  mkdir -p "$tools"
  tmp=$(mktemp -d "$tools/$name.tmp.XXXXXX")
  if ! (cd "$tmp" && npm pack --silent "$package@$version" >/dev/null); then
    rm -rf "$tmp"
    echo "deps: npm pack $package@$version failed" >&2
    return 1
  fi
  sum=$(sha256sum "$tmp"/*.tgz | cut -d' ' -f1)
  if [ "$sum" != "$want" ]; then
    rm -rf "$tmp"
    echo "deps: $package@$version has SHA-256 $sum, want $want; not installed" >&2
    return 1
  fi
  tar -xzf "$tmp"/*.tgz -C "$tmp" "package/$file"
  mkdir -p "$dir"
  mv "$tmp/package/$file" "$out.tmp"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
  echo "deps: $name $version installed: $out"
}

# axe: the axe-core script the serve pages' Chromium test injects.
axe() { npm_fetch axe-core "$AXE_PACKAGE" "$AXE_VERSION" "$AXE_SHA256" axe.min.js; }

# chdb: the chDB library (178 MB) of the ClickHouse 26 tests.
chdb() { npm_fetch chdb "$CHDB_PACKAGE" "$CHDB_VERSION" "$CHDB_SHA256" libchdb.so; }

if [ "${1:-}" = "--chdb" ]; then
  command -v npm >/dev/null || { echo "deps: npm is missing: run make deps (Debian: apt-get install nodejs npm)" >&2; exit 1; }
  chdb
  exit 0
fi

if [ "${1:-}" = "--axe" ]; then
  command -v npm >/dev/null || { echo "deps: npm is missing: run make deps (Debian: apt-get install nodejs npm)" >&2; exit 1; }
  axe
  exit 0
fi

if [ "${1:-}" = "--list" ]; then
  for c in "${checks[@]}"; do
    rest=${c#* :: }; pkgs=${rest%% :: *}; why=${rest#* :: }
    printf '%-40s %s\n' "$pkgs" "$why"
  done
  exit 0
fi

need=()
for c in "${checks[@]}"; do
  check=${c%% :: *}; rest=${c#* :: }; pkgs=${rest%% :: *}
  if ! (eval "$check") >/dev/null 2>&1; then
    read -r -a p <<<"$pkgs"
    need+=("${p[@]}")
  fi
done
if [ ${#need[@]} -eq 0 ]; then
  echo "deps: every Debian package the integration tests use is installed"
else
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${need[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "deps: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
chdb
axe
