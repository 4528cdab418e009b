package pricebook

import (
	"math/big"
	"sort"
	"time"
)

// Policy says what a team pays for.
type Policy string

// Policies of the contract.
const (
	// PolicyAllocation charges the GPU-hours a team's containers held.
	PolicyAllocation Policy = "allocation"
	// PolicyUsage charges the GPU-hours a team's containers used; with a
	// memoryWeight w, (1-w) x used + w x memory share (see Book).
	PolicyUsage Policy = "usage"
	// PolicyFlat charges a monthly price per GPU slot (slotRates), prorated
	// by the slot-hours held in each calendar month, whatever was used.
	PolicyFlat Policy = "flat"
)

// Idle says who pays for capacity no team is charged for.
type Idle string

// Idle handling of the contract.
const (
	// IdlePlatform puts it on a platform line.
	IdlePlatform Idle = "platform"
	// IdleShared spreads it over the teams on the same GPU model.
	IdleShared Idle = "shared"
)

// Defaults for fields a price book may leave out.
const (
	DefaultTimezone = "UTC"
	DefaultIdle     = IdlePlatform
)

// Book is a validated price book.
type Book struct {
	Source    string // the file it came from, for messages
	Currency  Currency
	Timezone  string         // IANA name as written
	Location  *time.Location // invoice periods are calendar months here
	TeamLabel string
	Policy    Policy
	Idle      Idle
	// Rates per physical GPU-hour by GPU model, keyed by the model name as
	// the ledger writes it (see gpu.NormaliseModel).
	Rates       map[string]Rate
	DefaultRate Rate
	// MemoryWeight (policy usage only, 0..1; nil when not given, which is
	// 0) blends memory into usage: a container is charged (1-w) x its used
	// GPU-seconds + w x its memory MiB-seconds / the device's memory MiB.
	MemoryWeight *big.Rat
	// MemoryMiB is the device memory of GPU models, as the book lists it;
	// MemoryMiBFor adds the built-in sizes.
	MemoryMiB map[string]int64
	// SlotRates (policy flat only) are prices per GPU slot per calendar
	// month by model: a whole GPU slot, a MIG slice or a replica paying its
	// share of one.
	SlotRates map[string]Rate
	// Energy is the optional energy rate and grid carbon intensity; nil
	// when the book has no energy section, and then the report shows no
	// energy cost or CO2e at all.
	Energy *Energy
	// Quota is the quota section, set only under policy quota.
	Quota *Quota
	// EffectiveFrom is the book's effectiveFrom, the instant its rates
	// hold from (zero when it names none: then the instant it is
	// recorded in the ledger, effective.go).
	EffectiveFrom time.Time
	// Example is the book's example field: its rates are placeholders
	// (the shipped deploy/prices.yaml), and every bill it prices is marked
	// "example prices" (docs/report.md).
	Example bool
	// SHA256 (hex) and Raw are the book's bytes as read: what the ledger
	// records, and how a report names the book that priced it.
	SHA256 string
	Raw    []byte
}

// MemoryWeighted reports whether usage is blended with memory.
func (b *Book) MemoryWeighted() bool { return b.MemoryWeight != nil && b.MemoryWeight.Sign() > 0 }

// MemoryMiBFor returns the device memory of a model in MiB: the book's
// memoryMiB entry, else the built-in size, else false.
func (b *Book) MemoryMiBFor(model string) (int64, bool) {
	if m, ok := b.MemoryMiB[model]; ok {
		return m, true
	}
	return builtinMemoryMiB(model)
}

// SlotRateFor returns the monthly slot price of a model under policy flat.
func (b *Book) SlotRateFor(model string) (Rate, bool) {
	r, ok := b.SlotRates[model]
	return r, ok
}

// RateFor returns the rate of a GPU model, and false when the book does not
// list it and the default applies.
func (b *Book) RateFor(model string) (Rate, bool) {
	if r, ok := b.Rates[model]; ok {
		return r, true
	}
	return b.DefaultRate, false
}

// Models returns the models the book prices, sorted.
func (b *Book) Models() []string {
	ms := make([]string, 0, len(b.Rates))
	for m := range b.Rates {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return ms
}
