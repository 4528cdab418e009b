package pricebook

import (
	"sort"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
)

// Policy says what a team pays for.
type Policy string

// Policies of the contract.
const (
	// PolicyAllocation charges the GPU-hours a team's containers held.
	PolicyAllocation Policy = "allocation"
	// PolicyUsage charges the GPU-hours a team's containers used.
	PolicyUsage Policy = "usage"
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
	DefaultTimezone  = "UTC"
	DefaultTeamLabel = "team"
	DefaultIdle      = IdlePlatform
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
	// the ledger writes it (see NormalizeModel).
	Rates       map[string]Rate
	DefaultRate Rate
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

// NormalizeModel writes a GPU model name the way the collector does: the
// NVML product name without its "NVIDIA " prefix, spaces turned into '-'
// ("NVIDIA A100-SXM4-80GB" and "A100 SXM4 80GB" both price A100-SXM4-80GB).
func NormalizeModel(name string) string { return attribution.NormaliseModel(name) }
