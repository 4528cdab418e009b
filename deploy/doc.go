// Package deploy holds no code: its tests check the Helm chart in
// deploy/helm/gpuledger with the real helm (lint, rendering, strict decoding
// into the Kubernetes API types, the values schema) and that the plain
// manifests in deploy/ are the chart's current rendering. deploy/image tests
// the container image.
package deploy
