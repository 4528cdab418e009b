#!/usr/bin/env bash
# tools.sh: install a pinned tool once and print its path. The binaries are
# cached outside the repository, keyed by version, so a second run (and a
# second worktree) does not rebuild them.
#   usage: scripts/tools.sh helm        -> prints the path of helm v$HELM_VERSION
# Cache: $GPULEDGER_TOOLS_DIR, default $(go env GOCACHE)/../gpuledger-tools.
set -euo pipefail
GO=${GO:-go}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
dir=${GPULEDGER_TOOLS_DIR:-$("$GO" env GOCACHE)/../gpuledger-tools}

case "${1:-}" in
helm)
	bin="$dir/helm-$HELM_VERSION/helm"
	if [ ! -x "$bin" ]; then
		echo "tools.sh: building helm $HELM_VERSION from the Go module proxy (a few minutes, once)" >&2
		tmp="$dir/helm-$HELM_VERSION.tmp.$$"
		mkdir -p "$tmp"
		GOBIN="$tmp" GOFLAGS=-mod=mod nice "$GO" install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
		mkdir -p "$dir/helm-$HELM_VERSION"
		mv "$tmp/helm" "$bin"
		rmdir "$tmp"
	fi
	echo "$bin"
	;;
*)
	echo "usage: $0 helm" >&2
	exit 2
	;;
esac
