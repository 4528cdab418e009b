package report

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"math"
	"math/big"
	"strconv"
)

// Savings is what the sharing advisor (`gpuledger advise`, package
// advisor/advise) recommends for the report's period. `gpuledger report
// --advice` attaches it; the report package only shows it, so a report
// never pays for reading every container row unless asked.
type Savings struct {
	// Total is the sum of the recommendations' rounded savings, in minor
	// units of the book's currency: capacity freed at the book's rates.
	Total           int64
	Recommendations []Saving
	Problems        []string
}

// Saving is one recommendation of the advisor.
type Saving struct {
	Kind                         string // reclaim, right-size, consolidate, keep
	Team, Namespace, GPUModel    string
	Workloads                    []string
	Before, After                string
	BeforeGPUs, AfterGPUs        float64
	SavedHours                   *big.Rat
	Amount                       int64 // minor units, rounded once
	ContentionMinutes, OfMinutes int   // replayed minutes over the proposed capacity
	Latency                      string
	Incomplete                   []string
}

type jsonSavings struct {
	Total           json.Number  `json:"total"`
	Recommendations []jsonSaving `json:"recommendations"`
	Problems        []string     `json:"problems"`
}

type jsonSaving struct {
	Kind              string      `json:"kind"`
	Team              string      `json:"team"`
	Namespace         string      `json:"namespace"`
	GPUModel          string      `json:"gpu_model"`
	Workloads         []string    `json:"workloads"`
	Before            string      `json:"before"`
	After             string      `json:"after"`
	BeforeGPUs        json.Number `json:"before_gpus"`
	AfterGPUs         json.Number `json:"after_gpus"`
	SavedHours        json.Number `json:"saved_gpu_hours"`
	Amount            json.Number `json:"saving"`
	ContentionMinutes int         `json:"contention_minutes"`
	OfMinutes         int         `json:"of_minutes"`
	Latency           string      `json:"latency"`
	Incomplete        []string    `json:"incomplete"`
}

// savingsJSON is the report JSON's "savings" object; nil (left out)
// without advice.
func savingsJSON(r *Report) *jsonSavings {
	s := r.Savings
	if s == nil {
		return nil
	}
	j := &jsonSavings{Total: num(r.Money(s.Total)), Recommendations: []jsonSaving{}, Problems: orEmpty(s.Problems)}
	for _, x := range s.Recommendations {
		j.Recommendations = append(j.Recommendations, jsonSaving{Kind: x.Kind, Team: x.Team, Namespace: x.Namespace, GPUModel: x.GPUModel,
			Workloads: orEmpty(x.Workloads), Before: x.Before, After: x.After, BeforeGPUs: gpusNum(x.BeforeGPUs), AfterGPUs: gpusNum(x.AfterGPUs),
			SavedHours: hoursNum(x.SavedHours), Amount: num(r.Money(x.Amount)), ContentionMinutes: x.ContentionMinutes, OfMinutes: x.OfMinutes,
			Latency: x.Latency, Incomplete: orEmpty(x.Incomplete)})
	}
	return j
}

func gpusNum(x float64) json.Number { return json.Number(strconv.FormatFloat(x, 'f', 3, 64)) }

// savingsPage is the HTML section's data; nil without advice.
type savingsPage struct {
	Total, Currency string
	// Released and Moved split Total (SplitSaving).
	Released, Moved string
	Rows            []savingRow
	Problems        []string
}

type savingRow struct {
	Kind, Workloads, Team, Model string
	Before, After, SavedHours    string
	Amount, Contention, Latency  string
	Released, Moved              string
	Incomplete                   []string
}

func savingsSection(r *Report, money func(int64) string) *savingsPage {
	s := r.Savings
	if s == nil {
		return nil
	}
	p := &savingsPage{Total: money(s.Total), Currency: r.Book.Currency.Code, Problems: s.Problems}
	var released, moved int64
	for _, x := range s.Recommendations {
		rel, mov := SplitSaving(x.Amount, x.BeforeGPUs, x.AfterGPUs)
		released, moved = released+rel, moved+mov
		row := savingRow{Kind: x.Kind, Team: x.Team, Model: x.GPUModel, Before: x.Before, After: x.After,
			SavedHours: hoursText(x.SavedHours), Amount: money(x.Amount), Latency: x.Latency, Incomplete: x.Incomplete,
			Released: money(rel), Moved: money(mov)}
		for i, w := range x.Workloads {
			if i > 0 {
				row.Workloads += ", "
			}
			row.Workloads += w
		}
		if x.Kind != "keep" {
			row.Contention = strconv.Itoa(x.ContentionMinutes) + " of " + strconv.Itoa(x.OfMinutes) + " min"
		}
		p.Rows = append(p.Rows, row)
	}
	p.Released, p.Moved = money(released), money(moved)
	return p
}

//go:embed savings.html.tmpl
var savingsHTML string

// The section is its own template in the page's set, so the page template
// only names it.
var _ = template.Must(pageTemplate.New("savings").Parse(savingsHTML))

// SplitSaving says which part of a saving of amount (minor units), for a
// change from beforeGPUs to afterGPUs held on average, is money the
// company stops spending and which is cost that moves between teams.
// Only whole GPUs can be given back (or left unbought): the saving of the
// whole GPUs the change frees is capacity released. The rest frees part
// of a GPU that stays in the fleet: the team that frees it pays less,
// and the time it frees becomes unused capacity that the other teams on
// the model (idle: shared) or the platform line (idle: platform) pay
// instead. The released part is amount × whole GPUs freed / GPUs freed,
// rounded half away from zero; moved is the rest, so the two add up to
// amount exactly.
func SplitSaving(amount int64, beforeGPUs, afterGPUs float64) (released, moved int64) {
	freed := beforeGPUs - afterGPUs
	if amount <= 0 || !(freed > 0) || math.IsInf(freed, 0) {
		return 0, amount
	}
	// A mean of whole GPUs comes out of float sums a hair under its value.
	whole := math.Floor(freed + 1e-9)
	if whole <= 0 {
		return 0, amount
	}
	if whole >= freed {
		return amount, 0
	}
	released = int64(math.Round(float64(amount) * whole / freed))
	return released, amount - released
}
