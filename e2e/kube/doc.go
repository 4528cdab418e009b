// Package kube tests gpuledger's Kubernetes side against a real
// kube-apiserver and etcd that the tests start on loopback
// (internal/kubetest):
//
//   - TestManifestsOnRealAPIServer applies every object rendered into
//     deploy/ (server-side dry run first, then for real) and proves with
//     `kubectl auth can-i` that the collector's ServiceAccount can read
//     exactly what the collector watches and nothing else.
//   - TestChartAllFeaturesOnRealAPIServer has the server dry-run every
//     object of the chart rendered with all optional features on.
//   - TestInformersAsServiceAccount runs collector/kubemeta's informers
//     against the server as that ServiceAccount and checks their snapshot
//     against nodes, namespaces, pods and ResourceSlices the test creates.
//
// The binaries come from scripts/kube-tools.sh (make kube-tools). Without
// them the tests skip, or fail when GPULEDGER_REQUIRE_INTEGRATION=1.
// docs/testing-kubernetes.md has the details.
package kube
