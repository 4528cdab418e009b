package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/gpuledger/gpuledger/ledger"
)

// CSVHeader is the finance CSV's header row: the contract's columns, then
// the ones gpuledger appends (docs/report.md), so that a reader of the
// contract's columns by position reads the same cells: data_start and
// data_end (what the ledger covers of the period), partial (true when that
// is less than the period: month to date, not the month's bill) and
// borrowed_gpu_hours (use beyond the held share, on time others left unused,
// which is why efficiency can exceed 1).
var CSVHeader = []string{"period_start", "period_end", "team", "namespace", "gpu_model", "sharing_mode", "line_type",
	"allocated_gpu_hours", "used_gpu_hours", "efficiency", "energy_kwh", "rate_per_gpu_hour", "amount", "currency",
	"data_start", "data_end", "partial", "borrowed_gpu_hours"}

// CSVEnergyColumns are appended to CSVHeader when the price book has an
// energy section (an energy rate, a carbon intensity or both): the line's
// energy cost in the book's currency and its CO2e in kg. A book without
// one writes CSVHeader alone, as before.
var CSVEnergyColumns = []string{"energy_cost", "co2e_kg"}

// Decimals of the CSV's (and JSON's) quantities. Hours to 1e-6 (3.6 ms);
// amounts always to the currency's minor unit.
const (
	hoursDecimals      = 6
	efficiencyDecimals = 4
	energyDecimals     = 6
	// slotMonthDecimals: a slot-month to 1e-9 is 2.7 ms of a month.
	slotMonthDecimals = 9
)

// WriteCSV writes the finance CSV: RFC 4180, UTF-8, a header row, one row
// per line, then the coverage gaps' comment records (csvGapRecords). An
// empty period is the header alone.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	header := CSVHeader
	if r.HasEnergy() {
		header = append(slices.Clip(CSVHeader), CSVEnergyColumns...)
	}
	if len(r.PriceBooks) > 0 {
		header = append(slices.Clip(header), CSVPriceBookColumns...)
	}
	if r.HasClusters() {
		header = append(slices.Clip(header), CSVClusterColumns...)
	}
	header = withAdjustmentColumns(r, header)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("cannot write report CSV: %w", err)
	}
	for _, l := range r.Lines {
		if err := cw.Write(withAdjustmentCells(r, csvRow(r, l))); err != nil {
			return fmt.Errorf("cannot write report CSV: %w", err)
		}
	}
	for _, a := range r.Adjustments {
		if err := cw.Write(csvAdjustmentRow(r, a)); err != nil {
			return fmt.Errorf("cannot write report CSV: %w", err)
		}
	}
	for _, rec := range append(csvGapRecords(r, len(header)), csvExampleRecords(r, len(header))...) {
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("cannot write report CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("cannot write report CSV: %w", err)
	}
	return nil
}

func csvRow(r *Report, l Line) []string {
	f := lineFields(r, l)
	row := []string{f.PeriodStart, f.PeriodEnd, neutralise(l.Team), neutralise(l.Namespace), neutralise(l.GPUModel),
		neutralise(l.SharingMode), string(l.Type), f.Allocated, f.Used, f.Efficiency, f.Energy, f.Rate, f.Amount, f.Currency,
		f.DataStart, f.DataEnd, f.Partial, f.Borrowed}
	if r.HasEnergy() {
		row = append(row, f.EnergyCost, f.Co2eKg)
	}
	if len(r.PriceBooks) > 0 {
		row = append(row, priceBookCells(l)...)
	}
	if r.HasClusters() {
		row = append(row, r.LineCluster(l))
	}
	return row
}

// fields is a line as text: the CSV, JSON and HTML all print these, so
// the three show the same numbers.
type fields struct {
	PeriodStart, PeriodEnd         string
	Allocated, Used, Efficiency    string
	Energy, Rate, Amount, Currency string
	// DataStart, DataEnd and Partial say what the ledger covers of the
	// period; Borrowed is a charge line's borrowed GPU-hours.
	DataStart, DataEnd, Partial, Borrowed string
	// EnergyCost and Co2eKg are set when the book names an energy rate
	// or a carbon intensity (not on the rounding line).
	EnergyCost, Co2eKg string
}

func lineFields(r *Report, l Line) fields {
	f := fields{
		PeriodStart: r.From.Format(time.RFC3339), PeriodEnd: r.To.Format(time.RFC3339),
		Allocated: decimal(l.AllocatedHours, hoursDecimals), Used: decimal(l.UsedHours, hoursDecimals),
		Efficiency: decimal(l.Efficiency, efficiencyDecimals), Energy: decimal(l.EnergyKWh, energyDecimals),
		Amount: r.Money(l.Amount), Currency: r.Book.Currency.Code,
	}
	if l.Rate != nil {
		f.Rate = l.Rate.Format(r.Book.Currency.MinorUnit)
	}
	if start, end := r.DataBounds(); !start.IsZero() {
		f.DataStart, f.DataEnd = start.Format(time.RFC3339), end.Format(time.RFC3339)
	}
	f.Partial = strconv.FormatBool(r.Partial())
	if b := l.Borrowed(); b != nil {
		f.Borrowed = decimal(b, hoursDecimals)
	}
	if l.EnergyKWh != nil && l.Type != LineRounding {
		if r.HasEnergyCost() {
			f.EnergyCost = r.Money(l.EnergyCost)
		}
		if r.HasCarbon() {
			f.Co2eKg = Kg(l.Co2eGrams)
		}
	}
	return f
}

// Borrowed is a charge line's borrowed GPU-hours: its used hours beyond
// its allocated hours, zero when it used no more than it held; nil on
// other lines. Time-slicing and MPS let a container run on time its
// co-tenants left idle, so used can exceed allocated: Borrowed is that
// excess, and (Used - Borrowed) / Allocated, the efficiency within the
// held share, never exceeds 1. It is the line's net over the period: a
// container that borrowed in one hour and left its share idle in another
// nets the two.
func (l Line) Borrowed() *big.Rat {
	if l.Type != LineCharge || l.UsedHours == nil || l.AllocatedHours == nil {
		return nil
	}
	return borrowed(l.UsedHours, l.AllocatedHours)
}

// borrowed is max(0, used - allocated).
func borrowed(used, allocated *big.Rat) *big.Rat {
	d := new(big.Rat).Sub(used, allocated)
	if d.Sign() < 0 {
		return new(big.Rat)
	}
	return d
}

// neutralise keeps a label from being read as a formula by a spreadsheet
// (OWASP CSV injection): ledger.GuardCell, the one guard every CSV uses.
// Only label cells come from users; numbers are written by us and left
// alone.
func neutralise(s string) string { return ledger.GuardCell(s) }
