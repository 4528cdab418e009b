package report

import (
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// LineType is the line_type column of the finance CSV.
type LineType string

// Line types of the contract, in the order lines are written.
const (
	// LineCharge: a team's own allocated (or used) GPU-hours.
	LineCharge LineType = "charge"
	// LineIdleShare: a team's share of capacity nobody was charged for,
	// with idle: shared.
	LineIdleShare LineType = "idle_share"
	// LinePlatform: capacity nobody was charged for, with idle: platform.
	LinePlatform LineType = "platform"
	// LineRounding: the one line that makes the file add up to the fleet
	// total rounded once.
	LineRounding LineType = "rounding"
)

// Line is one line of the chargeback. Quantities are exact; Amount is the
// rounded amount in the currency's minor unit.
type Line struct {
	// Cluster is the cluster whose bill the line is from, on a fleet bill
	// of several clusters (BuildFleet); empty otherwise.
	Cluster                                string
	Team, Namespace, GPUModel, SharingMode string
	Type                                   LineType
	// AllocatedHours and UsedHours are GPU-hours (nil on the rounding
	// line). The policy's column (allocated under allocation, used under
	// usage) is what the line pays for.
	AllocatedHours, UsedHours *big.Rat
	// Efficiency is used / allocated on charge lines, nil where nothing
	// was allocated.
	Efficiency *big.Rat
	EnergyKWh  *big.Rat // nil on the rounding line
	Rate       *pricebook.Rate
	Exact      *big.Rat // the amount before rounding
	Amount     int64    // minor units
	// Charged is the GPU-hours the line pays for (nil on the rounding
	// line): the policy's column, or under memory weighting the blend of
	// used and memory hours. Under every policy Exact = Charged x Rate.
	Charged *big.Rat
	// MemoryHours is a charge line's memory share in GPU-hours (memory
	// MiB-hours / the device's MiB, after the clamp); nil unless the book
	// has a memoryWeight.
	MemoryHours *big.Rat
	// SlotMonths and SlotRate are set under policy flat: the slot-months
	// the line pays for (each day's slot-hours over the hours of its
	// calendar month) and the price per slot per month. Exact = SlotMonths
	// x SlotRate; Rate is then derived, Exact / Charged.
	SlotMonths *big.Rat
	SlotRate   *pricebook.Rate
	// EnergyCost (minor units) and Co2eGrams are the line's share of the
	// period's energy cost and CO2e (energy.go): set only when the book
	// has an energy section, never part of Amount.
	EnergyCost, Co2eGrams int64
	// PricedBy is the price book that priced the line when the ledger
	// records price books (pricebooks.go); nil otherwise, and on the
	// rounding line.
	PricedBy *PricedBy
	// micro is a charge or platform line's sums in integer units, as the
	// builder added them, when hasMicro; other lines (idle shares, quota,
	// rounding, adjustments) have only the Rats.
	micro    quantity
	hasMicro bool
}

// Micro is a charge or platform line's allocated and used GPU-micro-seconds
// and its milli-joules, the integers its AllocatedHours, UsedHours and
// EnergyKWh are (x / 3.6e9), so that sums of many lines need no
// reduction; ok is false on a line built without them.
func (l *Line) Micro() (allocUS, usedUS, energyMJ int64, ok bool) {
	return l.micro.alloc, l.micro.used, l.micro.energy, l.hasMicro
}

// Units of Micro's integers: GPU-micro-seconds per GPU-hour, milli-joules
// per kWh.
const (
	MicroPerHour = microPerHour
	MilliPerKWh  = milliPerKWh
)

// ChargedHours is the GPU-hours the line pays for under the policy: the
// policy's column (used under usage, allocated under allocation and
// flat), or Charged where the builder set it (memory weighting blends the
// two columns).
func (l Line) ChargedHours(p pricebook.Policy) *big.Rat {
	if l.Charged != nil {
		return l.Charged
	}
	if p == pricebook.PolicyUsage {
		return l.UsedHours
	}
	return l.AllocatedHours
}

// ModelSummary is one GPU model's capacity, how it was used, and what it
// cost.
type ModelSummary struct {
	Model string
	Known bool // priced by the book; false: at the default rate
	Rate  pricebook.Rate
	Rows  int64 // ledger rows aggregated
	// CapacityHours is the hours the model's GPUs were observed, measured
	// by the policy's partition: what is charged, in total.
	CapacityHours *big.Rat
	// The two partitions of the ledger contract, summed over the period.
	AllocatedHours, UnallocatedHours        *big.Rat // containers, nobody
	UsedHours, UnattributedHours, IdleHours *big.Rat // containers, no container, nobody
	Exact                                   *big.Rat // capacity x rate (flat: SlotMonths x SlotRate)
	Amount                                  int64    // Exact rounded once
	PlatformAmount, IdleShareAmount         int64    // of Amount: capacity no team was charged for
	IdleSharedBy                            []Payer  // who took the idle shares, largest first
	// Under policy flat: the capacity in slot-months and the price per
	// slot per month (Rate is then Exact / CapacityHours); nil otherwise.
	SlotMonths *big.Rat
	SlotRate   *pricebook.Rate
}

// Payer is a team and the amount it paid.
type Payer struct {
	Team   string
	Amount int64
}

// TeamSummary adds up a team's lines.
type TeamSummary struct {
	Team       string
	Namespaces []string
	// AllocatedHours and UsedHours are its containers' (charge lines).
	AllocatedHours, UsedHours *big.Rat
	// HeldIdleHours: allocated hours its containers did not use (per line,
	// never negative).
	HeldIdleHours *big.Rat
	// BorrowedHours: used hours beyond allocated hours, summed over its
	// charge lines (Line.Borrowed).
	BorrowedHours *big.Rat
	Efficiency    *big.Rat
	Charge        int64
	IdleShare     int64
	Total         int64
	// EnergyKWh, EnergyCost and Co2eGrams add up its lines' (charge and
	// idle share); set only when the book has an energy section.
	EnergyKWh             *big.Rat
	EnergyCost, Co2eGrams int64
}

// ModeSummary adds up the charge lines of one sharing mode.
type ModeSummary struct {
	Mode                      string
	AllocatedHours, UsedHours *big.Rat
	BorrowedHours             *big.Rat // Line.Borrowed, summed
	Efficiency                *big.Rat
	Charge                    int64
}

// Report is the chargeback for one period.
type Report struct {
	From, To time.Time // [From, To), in the book's zone
	Book     *pricebook.Book
	Lines    []Line
	Total    int64 // minor units: the sum of every line's Amount
	// Platform and Rounding are the amounts of those lines.
	Platform, Rounding int64
	Models             []ModelSummary
	Teams              []TeamSummary // largest total first
	Modes              []ModeSummary
	// Savings is the sharing advisor's result for the period, when the
	// caller attached it (gpuledger report --advice); nil otherwise.
	Savings *Savings
	// Quota is the quota section (quota.go): what teams were promised
	// beside what they held and used; nil when the ledger records no quota
	// for the period and the policy is not quota.
	Quota *QuotaSection
	// Tokens is the cost per token section, when the caller attached it
	// (gpuledger report --prometheus); nil otherwise.
	Tokens *Tokens
	// TokensUnavailable, when Tokens is nil, says in one line why a cost
	// per token section that was asked for is missing (gpuledger serve,
	// when Prometheus does not answer); the HTML page shows it in the
	// section's place. The report command never sets it: there a
	// Prometheus that does not answer is an error.
	TokensUnavailable string
	// Findings are the period's detector episodes, grouped per container.
	Findings []FindingSummary
	// FindingsDropped counts episodes left out: more containers were
	// flagged than a report lists.
	FindingsDropped int
	// DataFrom and DataTo bound the days of the period the ledger has
	// data for (day buckets in the book's zone, clipped to the period);
	// zero when the period is empty. See Partial.
	DataFrom, DataTo time.Time
	// DataStart and DataEnd are the start of the period's first ledger
	// row and the end of its last, clipped to the period (see dataBounds);
	// zero when the period is empty.
	DataStart, DataEnd time.Time
	// Coverage is the period's gaps: time GPUs the ledger saw have no rows
	// for (gaps.go); nil where the source cannot list its holes.
	Coverage *Coverage
	// GeneratedAt is shown when set; Build leaves it zero. A period that
	// ends after it is partial.
	GeneratedAt time.Time
	// Devices are the period's per-device day aggregates (LoadDevices):
	// when set, the FOCUS export has a row per line, GPU or MIG instance
	// and pod instead of one per line.
	Devices []ledger.Aggregate
	// FOCUSVersion is the FOCUS version the FOCUS export writes,
	// FOCUSVersion13 (when empty) or FOCUSVersion14.
	FOCUSVersion string
	// Energy is the period's energy cost and CO2e when the book has an
	// energy section (energy.go); nil otherwise.
	Energy *EnergyTotals
	// PriceBooks are the price books that priced the period, in force
	// order, when the ledger records price books (BuildDated); nil
	// otherwise. pieces are the reports of the period's parts each book
	// priced, when there are several (the FOCUS export writes theirs).
	PriceBooks []*PricedBy
	pieces     []*Report
	// Adjustments are the corrections of closed months this open month
	// bills (adjust.go), and AdjustmentNotes what could not be adjusted;
	// not part of Total (AdjustmentsTotal).
	Adjustments     []Adjustment
	AdjustmentNotes []string
	// Cluster names the one cluster a report bills (BuildFleet with a
	// cluster); empty on a fleet's bill. Clusters are the clusters the
	// period holds, each with its own bill's total: on a fleet's bill
	// they add up to Total.
	Cluster  string
	Clusters []ClusterTotal
	// ClusterNotes say which billed clusters were renamed, naming the
	// names one cluster shipped under (renameNotes).
	ClusterNotes []string
}

// Empty reports whether the period had no ledger rows.
func (r *Report) Empty() bool { return len(r.Lines) == 0 }

// UnknownModels are the GPU models seen that the book does not price.
func (r *Report) UnknownModels() []ModelSummary {
	var out []ModelSummary
	for _, m := range r.Models {
		if !m.Known {
			out = append(out, m)
		}
	}
	return out
}

// Money writes an amount in minor units as a decimal with the currency's
// minor unit ("1234.50", "-0.01", "350" for JPY).
func (r *Report) Money(minor int64) string {
	return formatMinor(minor, r.Book.Currency.MinorUnit, false)
}

// PeriodLabel names the period: "2026-03" for a calendar month, else the
// two bounds.
func (r *Report) PeriodLabel() string {
	if isMonth(r.From, r.To, r.Book.Location) {
		return r.From.Format("2006-01")
	}
	return r.From.Format(time.RFC3339) + " – " + r.To.Format(time.RFC3339)
}

// formatMinor writes minor units with unit decimals, optionally grouping
// thousands for people.
func formatMinor(minor int64, unit int, group bool) string {
	neg := minor < 0
	abs := uint64(minor)
	if neg {
		abs = -abs // two's complement: MinInt64's magnitude too
	}
	s := strconv.FormatUint(abs, 10)
	if len(s) <= unit {
		s = strings.Repeat("0", unit-len(s)+1) + s
	}
	intPart, frac := s[:len(s)-unit], s[len(s)-unit:]
	if group {
		intPart = groupThousands(intPart)
	}
	if unit > 0 {
		intPart += "." + frac
	}
	if neg {
		return "-" + intPart
	}
	return intPart
}

func groupThousands(s string) string {
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	lead := len(s) % 3
	if lead > 0 {
		b.WriteString(s[:lead])
	}
	for i := lead; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
