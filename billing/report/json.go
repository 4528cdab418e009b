package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
)

// The JSON form carries every number as the same decimal text as the CSV
// (json.Number: a number in the JSON, never through float64).

type jsonReport struct {
	Period          jsonPeriod    `json:"period"`
	ExamplePrices   bool          `json:"example_prices,omitempty"` // an example book priced the period (example.go)
	Currency        string        `json:"currency"`
	MinorUnit       int           `json:"minor_unit"`
	Policy          string        `json:"policy"`
	Idle            string        `json:"idle"`
	MemoryWeight    *json.Number  `json:"memory_weight,omitempty"`
	TeamLabel       string        `json:"team_label"`
	Empty           bool          `json:"empty"`
	Partial         bool          `json:"partial"`
	PartialNote     string        `json:"partial_note,omitempty"`
	Message         string        `json:"message,omitempty"`
	Total           json.Number   `json:"total"`
	Platform        json.Number   `json:"platform"`
	Rounding        json.Number   `json:"rounding"`
	Lines           []jsonLine    `json:"lines"`
	Teams           []jsonTeam    `json:"teams"`
	SharingModes    []jsonMode    `json:"sharing_modes"`
	Models          []jsonModel   `json:"gpu_models"`
	UnknownModels   []string      `json:"unknown_models"`
	Findings        []jsonFinding `json:"findings"`
	FindingsDropped int           `json:"findings_dropped,omitempty"`
	Savings         *jsonSavings  `json:"savings,omitempty"`
	Tokens          *jsonTokens   `json:"tokens,omitempty"`
	Quota           *jsonQuota    `json:"quota,omitempty"`
	CoverageGaps    *jsonCoverage `json:"coverage_gaps,omitempty"`
	GeneratedAt     string        `json:"generated_at,omitempty"`
	// Energy is there when the book has an energy section.
	Energy *jsonEnergy `json:"energy,omitempty"`
	// PriceBooks: the books that priced the period, when the ledger
	// records books (pricebooks_render.go).
	PriceBooks []jsonPriceBook `json:"price_books,omitempty"`
	// The adjustments of closed months (adjust.go), when there are any.
	Adjustments          []jsonAdjustment `json:"adjustments,omitempty"`
	AdjustmentsTotal     *json.Number     `json:"adjustments_total,omitempty"`
	TotalWithAdjustments *json.Number     `json:"total_with_adjustments,omitempty"`
	AdjustmentNotes      []string         `json:"adjustment_notes,omitempty"`
	// Cluster names the one cluster the report bills; Clusters are the
	// period's clusters with their bills' totals (a fleet's of several
	// adds up to total). Both absent on a single-cluster install's bill.
	Cluster      string        `json:"cluster,omitempty"`
	Clusters     []jsonCluster `json:"clusters,omitempty"`
	ClusterNotes []string      `json:"cluster_notes,omitempty"`
}

type jsonCluster struct {
	Cluster string      `json:"cluster"`
	Total   json.Number `json:"total"`
}

// jsonEnergy is the period's energy figures (informational: not in total).
type jsonEnergy struct {
	RatePerKWh      *json.Number `json:"rate_per_kwh,omitempty"`
	CarbonIntensity *json.Number `json:"carbon_intensity_g_per_kwh,omitempty"`
	EnergyKWh       json.Number  `json:"energy_kwh"`
	EnergyCost      *json.Number `json:"energy_cost,omitempty"`
	Co2eKg          *json.Number `json:"co2e_kg,omitempty"`
	PlatformKWh     json.Number  `json:"platform_energy_kwh"`
	PlatformCost    *json.Number `json:"platform_energy_cost,omitempty"`
	PlatformCo2eKg  *json.Number `json:"platform_co2e_kg,omitempty"`
	// NodeLabel and UnlabelledNodes: with carbon intensities by node
	// label, the label and how many nodes had no value of it recorded
	// (they took carbon_intensity_g_per_kwh).
	NodeLabel       string `json:"carbon_node_label,omitempty"`
	UnlabelledNodes *int   `json:"nodes_without_recorded_label,omitempty"`
}

type jsonPeriod struct {
	Label    string `json:"label"`
	Start    string `json:"start"`
	End      string `json:"end"`
	Timezone string `json:"timezone"`
	// DataStart and DataEnd are the start of the period's first ledger
	// row and the end of its last (Report.DataBounds).
	DataStart string `json:"data_start,omitempty"`
	DataEnd   string `json:"data_end,omitempty"`
}

type jsonLine struct {
	Team           string       `json:"team"`
	Namespace      string       `json:"namespace"`
	GPUModel       string       `json:"gpu_model"`
	SharingMode    string       `json:"sharing_mode"`
	LineType       string       `json:"line_type"`
	AllocatedHours *json.Number `json:"allocated_gpu_hours"`
	UsedHours      *json.Number `json:"used_gpu_hours"`
	Efficiency     *json.Number `json:"efficiency"`
	BorrowedHours  *json.Number `json:"borrowed_gpu_hours"`
	EnergyKWh      *json.Number `json:"energy_kwh"`
	Rate           *json.Number `json:"rate_per_gpu_hour"`
	Amount         json.Number  `json:"amount"`
	// What the line pays for (not in the CSV): charged GPU-hours, and the
	// policy's extra quantities where it has them.
	ChargedHours *json.Number `json:"charged_gpu_hours"`
	MemoryHours  *json.Number `json:"memory_gpu_hours,omitempty"`
	SlotMonths   *json.Number `json:"slot_months,omitempty"`
	SlotRate     *json.Number `json:"slot_rate_per_month,omitempty"`
	EnergyCost   *json.Number `json:"energy_cost,omitempty"`
	Co2eKg       *json.Number `json:"co2e_kg,omitempty"`
	// PriceBook is the short SHA-256 of the book that priced the line.
	PriceBook string `json:"price_book,omitempty"`
	// Cluster is the line's cluster, on a bill that names clusters.
	Cluster string `json:"cluster,omitempty"`
}

type jsonTeam struct {
	Team           string       `json:"team"`
	Namespaces     []string     `json:"namespaces"`
	AllocatedHours json.Number  `json:"allocated_gpu_hours"`
	UsedHours      json.Number  `json:"used_gpu_hours"`
	HeldIdleHours  json.Number  `json:"held_idle_gpu_hours"`
	BorrowedHours  json.Number  `json:"borrowed_gpu_hours"`
	Efficiency     *json.Number `json:"efficiency"`
	Charge         json.Number  `json:"charge"`
	IdleShare      json.Number  `json:"idle_share"`
	Total          json.Number  `json:"total"`
	EnergyKWh      *json.Number `json:"energy_kwh,omitempty"`
	EnergyCost     *json.Number `json:"energy_cost,omitempty"`
	Co2eKg         *json.Number `json:"co2e_kg,omitempty"`
}

type jsonMode struct {
	Mode           string       `json:"sharing_mode"`
	AllocatedHours json.Number  `json:"allocated_gpu_hours"`
	UsedHours      json.Number  `json:"used_gpu_hours"`
	BorrowedHours  json.Number  `json:"borrowed_gpu_hours"`
	Efficiency     *json.Number `json:"efficiency"`
	Charge         json.Number  `json:"charge"`
}

type jsonModel struct {
	Model             string       `json:"gpu_model"`
	Priced            bool         `json:"priced"`
	Rate              json.Number  `json:"rate_per_gpu_hour"`
	Rows              int64        `json:"ledger_rows"`
	CapacityHours     json.Number  `json:"capacity_gpu_hours"`
	AllocatedHours    json.Number  `json:"allocated_gpu_hours"`
	UnallocatedHours  json.Number  `json:"unallocated_gpu_hours"`
	UsedHours         json.Number  `json:"used_gpu_hours"`
	UnattributedHours json.Number  `json:"unattributed_gpu_hours"`
	IdleHours         json.Number  `json:"idle_gpu_hours"`
	Amount            json.Number  `json:"amount"`
	PlatformAmount    json.Number  `json:"platform_amount"`
	IdleShareAmount   json.Number  `json:"idle_share_amount"`
	SlotMonths        *json.Number `json:"slot_months,omitempty"`
	SlotRate          *json.Number `json:"slot_rate_per_month,omitempty"`
}

type jsonFinding struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Pod       string   `json:"pod"`
	Container string   `json:"container"`
	Team      string   `json:"team"`
	Node      string   `json:"node"`
	GPUs      []string `json:"gpus"`
	Episodes  int      `json:"episodes"`
	Seconds   float64  `json:"seconds"`
	First     string   `json:"first_start"`
	Last      string   `json:"last_end"`
	Related   []string `json:"related_pods"`
}

// NoUsageMessage is what every form says about an empty period.
const NoUsageMessage = "no usage in this period"

// WriteJSON writes the report as one JSON document with the CSV's numbers.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(toJSON(r)); err != nil {
		return fmt.Errorf("cannot write report JSON: %w", err)
	}
	return nil
}

func toJSON(r *Report) jsonReport {
	j := jsonReport{
		Period:   jsonPeriod{Label: r.PeriodLabel(), Start: r.From.Format(time.RFC3339), End: r.To.Format(time.RFC3339), Timezone: r.Book.Timezone},
		Currency: r.Book.Currency.Code, MinorUnit: r.Book.Currency.MinorUnit, Policy: string(r.Book.Policy),
		Idle: string(r.Book.Idle), TeamLabel: r.Book.TeamLabel, Empty: r.Empty(),
		Partial: r.Partial(), PartialNote: r.PartialNote(),
		Total: num(r.Money(r.Total)), Platform: num(r.Money(r.Platform)), Rounding: num(r.Money(r.Rounding)),
		Lines: []jsonLine{}, Teams: []jsonTeam{}, SharingModes: []jsonMode{}, Models: []jsonModel{},
		UnknownModels: []string{}, Findings: []jsonFinding{}, FindingsDropped: r.FindingsDropped,
		Savings:       savingsJSON(r),
		Tokens:        tokensJSON(r),
		Quota:         quotaJSON(r),
		CoverageGaps:  coverageJSON(r),
		ExamplePrices: r.ExamplePrices(),
	}
	if r.Book.MemoryWeight != nil {
		j.MemoryWeight = optNum(exactDecimal(r.Book.MemoryWeight))
	}
	if r.Empty() {
		j.Message = NoUsageMessage
	} else {
		start, end := r.DataBounds()
		j.Period.DataStart, j.Period.DataEnd = start.Format(time.RFC3339), end.Format(time.RFC3339)
	}
	if !r.GeneratedAt.IsZero() {
		j.GeneratedAt = r.GeneratedAt.Format(time.RFC3339)
	}
	for _, l := range r.Lines {
		f := lineFields(r, l)
		j.Lines = append(j.Lines, jsonLine{Team: l.Team, Namespace: l.Namespace, GPUModel: l.GPUModel, SharingMode: l.SharingMode,
			LineType: string(l.Type), AllocatedHours: optNum(f.Allocated), UsedHours: optNum(f.Used), Efficiency: optNum(f.Efficiency),
			BorrowedHours: optNum(f.Borrowed), EnergyKWh: optNum(f.Energy), Rate: optNum(f.Rate), Amount: num(f.Amount),
			ChargedHours: optNum(decimal(l.Charged, hoursDecimals)), MemoryHours: optNum(decimal(l.MemoryHours, hoursDecimals)),
			SlotMonths: optNum(decimal(l.SlotMonths, slotMonthDecimals)), SlotRate: optRate(l.SlotRate, r.Book.Currency.MinorUnit),
			EnergyCost: optNum(f.EnergyCost), Co2eKg: optNum(f.Co2eKg), PriceBook: jsonLineBook(l)})
		if r.HasClusters() {
			j.Lines[len(j.Lines)-1].Cluster = r.LineCluster(l)
		}
	}
	j.ClusterNotes = r.ClusterNotes
	if r.HasClusters() {
		j.Cluster = r.Cluster
		for _, c := range r.Clusters {
			j.Clusters = append(j.Clusters, jsonCluster{Cluster: c.Cluster, Total: num(r.Money(c.Total))})
		}
	}
	j.PriceBooks = priceBooksJSON(r)
	for _, t := range r.Teams {
		j.Teams = append(j.Teams, jsonTeam{Team: t.Team, Namespaces: t.Namespaces, AllocatedHours: hoursNum(t.AllocatedHours),
			UsedHours: hoursNum(t.UsedHours), HeldIdleHours: hoursNum(t.HeldIdleHours), BorrowedHours: hoursNum(t.BorrowedHours), Efficiency: optNum(decimal(t.Efficiency, efficiencyDecimals)),
			Charge: num(r.Money(t.Charge)), IdleShare: num(r.Money(t.IdleShare)), Total: num(r.Money(t.Total))})
		if r.HasEnergy() {
			jt := &j.Teams[len(j.Teams)-1]
			jt.EnergyKWh = optNum(decimal(t.EnergyKWh, energyDecimals))
			jt.EnergyCost, jt.Co2eKg = energyCells(r, t.EnergyCost, t.Co2eGrams)
		}
	}
	j.Energy = energyJSON(r)
	for _, m := range r.Modes {
		j.SharingModes = append(j.SharingModes, jsonMode{Mode: m.Mode, AllocatedHours: hoursNum(m.AllocatedHours), UsedHours: hoursNum(m.UsedHours),
			BorrowedHours: hoursNum(m.BorrowedHours), Efficiency: optNum(decimal(m.Efficiency, efficiencyDecimals)), Charge: num(r.Money(m.Charge))})
	}
	for _, m := range r.Models {
		j.Models = append(j.Models, jsonModel{Model: m.Model, Priced: m.Known, Rate: num(m.Rate.Format(r.Book.Currency.MinorUnit)), Rows: m.Rows,
			CapacityHours: hoursNum(m.CapacityHours), AllocatedHours: hoursNum(m.AllocatedHours), UnallocatedHours: hoursNum(m.UnallocatedHours),
			UsedHours: hoursNum(m.UsedHours), UnattributedHours: hoursNum(m.UnattributedHours), IdleHours: hoursNum(m.IdleHours),
			Amount: num(r.Money(m.Amount)), PlatformAmount: num(r.Money(m.PlatformAmount)), IdleShareAmount: num(r.Money(m.IdleShareAmount))})
		jm := &j.Models[len(j.Models)-1]
		jm.SlotMonths, jm.SlotRate = optNum(decimal(m.SlotMonths, slotMonthDecimals)), optRate(m.SlotRate, r.Book.Currency.MinorUnit)
		if !m.Known {
			j.UnknownModels = append(j.UnknownModels, m.Model)
		}
	}
	for _, f := range r.Findings {
		j.Findings = append(j.Findings, jsonFinding{Kind: f.Kind, Namespace: f.Namespace, Pod: f.Pod, Container: f.Container,
			Team: f.Team, Node: f.Node, GPUs: orEmpty(f.GPUs), Episodes: f.Episodes, Seconds: f.Duration.Seconds(),
			First: f.First.UTC().Format(time.RFC3339), Last: f.Last.UTC().Format(time.RFC3339), Related: orEmpty(f.Related)})
	}
	adjustmentsJSON(r, &j)
	return j
}

// energyCells writes an energy cost and a CO2e as the book names them.
func energyCells(r *Report, cost, grams int64) (c, g *json.Number) {
	if r.HasEnergyCost() {
		c = optNum(r.Money(cost))
	}
	if r.HasCarbon() {
		g = optNum(Kg(grams))
	}
	return c, g
}

func energyJSON(r *Report) *jsonEnergy {
	if !r.HasEnergy() {
		return nil
	}
	e, t := r.Book.Energy, r.Energy
	if t == nil {
		t = &EnergyTotals{KWh: new(big.Rat), PlatformKWh: new(big.Rat)} // an empty period
	}
	j := &jsonEnergy{EnergyKWh: num(decimal(t.KWh, energyDecimals)), PlatformKWh: num(decimal(t.PlatformKWh, energyDecimals))}
	if e.Rate != nil {
		j.RatePerKWh = optNum(e.Rate.String())
	}
	if e.CarbonIntensity != nil {
		j.CarbonIntensity = optNum(exactDecimal(e.CarbonIntensity))
	}
	j.EnergyCost, j.Co2eKg = energyCells(r, t.Cost, t.Co2eGrams)
	j.PlatformCost, j.PlatformCo2eKg = energyCells(r, t.PlatformCost, t.PlatformCo2eGrams)
	if t.NodeLabel != "" {
		n := t.UnlabelledNodes
		j.NodeLabel, j.UnlabelledNodes = t.NodeLabel, &n
	}
	return j
}

func num(s string) json.Number { return json.Number(s) }

func optRate(r *pricebook.Rate, minor int) *json.Number {
	if r == nil {
		return nil
	}
	return optNum(r.Format(minor))
}

// exactDecimal writes a decimal fraction (a memoryWeight, 1 minus one)
// with no more decimals than it has: 0.3, not 0.300.
func exactDecimal(w *big.Rat) string {
	x, d := new(big.Rat).Set(w), 0
	for ; d < 40 && !x.IsInt(); d++ {
		x.Mul(x, big.NewRat(10, 1))
	}
	return w.FloatString(d)
}

func optNum(s string) *json.Number {
	if s == "" {
		return nil
	}
	n := json.Number(s)
	return &n
}

func hoursNum(x *big.Rat) json.Number {
	if x == nil {
		return "0"
	}
	return json.Number(decimal(x, hoursDecimals))
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
