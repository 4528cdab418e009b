// Package pricebook loads the chargeback price book (prices.yaml, contract:
// docs/report.md): the currency and its minor unit, the time
// zone invoice periods are cut in, the team label, the charging policy, the
// handling of idle capacity and the rate per physical GPU-hour of each GPU
// model.
//
// Rates are exact decimals (math/big.Rat read from the YAML text, never
// through float64), so 2.123456789 per hour stays 2.123456789 however many
// hours it is multiplied by. Every error names the file, the line and the
// field that is wrong.
package pricebook
