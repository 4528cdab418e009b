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
set -euo pipefail

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
)

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
  echo "deps: every integration test dependency is installed"
  exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${need[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
