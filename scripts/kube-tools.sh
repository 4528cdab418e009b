#!/bin/sh
# Builds etcd, kube-apiserver and kubectl for the real-API-server tests
# (internal/kubetest) into a cache directory keyed by version:
#
#   ${GPULEDGER_TOOLS_DIR:-$(go env GOCACHE)/../gpuledger-tools}/kube-<k8s version>-etcd-<etcd version>/
#
# Idempotent: a binary already there is not rebuilt, so only the first run is
# slow (about 10 minutes on 2 cores). The versions come from the tool modules
# internal/tools/kubeserver and internal/tools/etcdserver (their go.mod and
# go.sum are the pins); `go install pkg@version` cannot build either because
# both upstream modules carry replace directives.
#
#   scripts/kube-tools.sh            build what is missing, print the directory
#   scripts/kube-tools.sh --dir      print the directory only
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
kubemod=$root/internal/tools/kubeserver
etcdmod=$root/internal/tools/etcdserver

modver() { # modver GOMOD MODULE: the required version of MODULE in GOMOD
	awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit }
		$1 == "require" && $2 == m { print $3; exit }' "$1"
}
kube_version=$(modver "$kubemod/go.mod" k8s.io/kubernetes)
etcd_version=$(modver "$etcdmod/go.mod" go.etcd.io/etcd/server/v3)
[ -n "$kube_version" ] && [ -n "$etcd_version" ] || { echo "kube-tools: cannot read versions from the tool modules" >&2; exit 1; }

# The same cache root as scripts/tools.sh (helm): beside Go's build cache.
cache=${GPULEDGER_TOOLS_DIR:-$(dirname "$("$GO" env GOCACHE)")/gpuledger-tools}
dir=$cache/kube-$kube_version-etcd-$etcd_version
if [ "${1:-}" = "--dir" ]; then echo "$dir"; exit 0; fi
mkdir -p "$dir"

# build MODULE_DIR NAME PACKAGE LDFLAGS: build PACKAGE as $dir/NAME unless it is there.
build() {
	if [ -x "$dir/$2" ]; then echo "kube-tools: $dir/$2 is there" >&2; return; fi
	echo "kube-tools: building $2 ($3) ..." >&2
	start=$(date +%s)
	tmp=$dir/.$2.tmp.$$
	(cd "$1" && CGO_ENABLED=0 nice -n 19 "$GO" build -mod=readonly -trimpath -ldflags "-s -w $4" -o "$tmp" "$3")
	mv -f "$tmp" "$dir/$2" # atomic: a half-written binary is never found
	echo "kube-tools: built $dir/$2 in $(( $(date +%s) - start ))s" >&2
}

minor=$(echo "$kube_version" | cut -d. -f2)
kver="-X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
kver="$kver -X k8s.io/client-go/pkg/version.gitVersion=$kube_version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build "$etcdmod" etcd go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd_version"
build "$kubemod" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kver"
build "$kubemod" kubectl k8s.io/kubernetes/cmd/kubectl "$kver"
echo "$dir"
