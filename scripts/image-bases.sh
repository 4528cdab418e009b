#!/usr/bin/env bash
# image-bases.sh: assemble, once, the local base images the Dockerfile is
# built from in the image test (no container registry is reachable here):
#   localhost/debian-minbase:bookworm        debootstrap --variant=minbase, imported
#   localhost/gpuledger-gobuilder:<go>       minbase + gcc libc6-dev + the host's Go toolchain
# Both stay in the local containers storage, so a second run costs nothing.
# Prints "MINBASE BUILDER" on stdout.
#   usage: scripts/image-bases.sh
set -euo pipefail
GO=${GO:-go}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
MINBASE=${MINBASE:-localhost/debian-minbase:bookworm}
goroot=$("$GO" env GOROOT)
gover=$("$GO" env GOVERSION)
BUILDER=${BUILDER:-localhost/gpuledger-gobuilder:$gover}
lockdir=${GPULEDGER_TOOLS_DIR:-$("$GO" env GOCACHE)/../gpuledger-tools}
mkdir -p "$lockdir"
exec 9>"$lockdir/image-bases.lock"
flock 9 # one builder at a time on this machine

have() { buildah inspect --type image "$1" >/dev/null 2>&1; }

if ! have "$MINBASE"; then
	t0=$SECONDS
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	nice debootstrap --variant=minbase bookworm "$root/fs" "$MIRROR" >&2
	tar -C "$root/fs" -c . | podman import - "$MINBASE" >&2
	rm -rf "$root"
	echo "image-bases.sh: $MINBASE built in $((SECONDS - t0)) s" >&2
fi

if ! have "$BUILDER"; then
	t0=$SECONDS
	ctr=$(buildah from "$MINBASE")
	trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
	buildah run --isolation chroot "$ctr" -- sh -c \
		'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev ca-certificates >/dev/null && rm -rf /var/lib/apt/lists/*' >&2
	buildah copy "$ctr" "$goroot" /usr/local/go >/dev/null
	buildah config --env PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--env GOTOOLCHAIN=local "$ctr"
	buildah commit -q "$ctr" "$BUILDER" >/dev/null
	buildah rm "$ctr" >/dev/null
	trap - EXIT
	echo "image-bases.sh: $BUILDER built in $((SECONDS - t0)) s" >&2
fi
echo "$MINBASE $BUILDER"
