// Package pricebook loads the chargeback price book (prices.yaml, contract:
// docs/report.md): the currency and its minor unit, the time
// zone invoice periods are cut in, the team label, the charging policy
// (allocation, usage, usage with a memoryWeight, or flat), the handling of
// idle capacity, the rate per physical GPU-hour of each GPU model (or,
// under flat, the price per GPU slot per month) and, for memory-weighted
// books, the device memory of models without a built-in size; and,
// optionally, an energy rate and a grid carbon intensity (one, or per node
// name) that the report shows beside the bill, never in it (energy.go).
//
// Rates are exact decimals (math/big.Rat read from the YAML text, never
// through float64), so 2.123456789 per hour stays 2.123456789 however many
// hours it is multiplied by; so is memoryWeight. Every error names the
// file, the line and the field that is wrong.
package pricebook
