# Real Kubernetes control plane for the tests (internal/kubetest, e2e/kube).
# Included by the top-level Makefile: `include internal/tools/kube.mk`.
#
# kube-tools builds etcd, kube-apiserver and kubectl from the tool modules
# in internal/tools/{etcdserver,kubeserver} into a cache keyed by version
# (GPULEDGER_TOOLS_DIR, default $(go env GOCACHE)/../gpuledger-tools, as for
# helm); binaries already
# there are not rebuilt (cold: ~10 min on 2 cores; warm: under a second).
# kube-test runs only the tests that use them.

.PHONY: kube-tools kube-test

kube-tools:
	GO=$(GO) sh scripts/kube-tools.sh

kube-test: kube-tools
	$(GO) test -count=1 ./internal/kubetest/ ./e2e/kube/
