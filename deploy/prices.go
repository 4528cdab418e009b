// Package deploy ships the deployment files; the binary compiles in the
// one it needs, so the file a user reads is the one it uses.
package deploy

import _ "embed"

// Prices is prices.yaml, the example price book the demo charges with.
//
//go:embed prices.yaml
var Prices []byte

// PricesPath is where Prices lives, relative to the repository root.
const PricesPath = "deploy/prices.yaml"
