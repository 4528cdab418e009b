package advicereport

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
)

// JSON: money and hours as decimal text written as numbers, as the
// report does.

type adviceJSON struct {
	Period string `json:"period"`
	Start  string `json:"start"`
	End    string `json:"end"`
	// Partial says why the period is covered only in part ("" for a
	// whole period): the advice is not the whole period's.
	Partial   string      `json:"partial,omitempty"`
	Currency  string      `json:"currency"`
	MinorUnit int         `json:"minor_unit"`
	Saving    json.Number `json:"saving"`
	// CapacityReleased and CostMoved split Saving (report.SplitSaving):
	// whole GPUs freed, money the company stops spending, and the rest,
	// cost that moves to other teams' share of unused capacity or the
	// platform line.
	CapacityReleased json.Number      `json:"capacity_released"`
	CostMoved        json.Number      `json:"cost_moved_between_teams"`
	Actions          int              `json:"actions"`
	Kept             int              `json:"kept"`
	Reconciliation   reconcileJSON    `json:"reconciliation"`
	Recommendations  []recommendJSON  `json:"recommendations"`
	MIGPacking       []migPackingJSON `json:"mig_packing"`
	Problems         []string         `json:"problems"`
}

type reconcileJSON struct {
	ReportTotal   json.Number `json:"report_total"`
	ReportCharges json.Number `json:"report_charge_lines"`
	HeldHours     json.Number `json:"held_gpu_hours"`
	HeldAtRates   json.Number `json:"held_at_rates"`
	Policy        string      `json:"policy"`
}

type recommendJSON struct {
	Kind        string         `json:"kind"`
	Team        string         `json:"team"`
	Namespace   string         `json:"namespace"`
	Workloads   []string       `json:"workloads"`
	GPUModel    string         `json:"gpu_model"`
	Modes       []string       `json:"sharing_modes"`
	Replicas    int            `json:"replicas"`
	Before      string         `json:"before"`
	After       string         `json:"after"`
	BeforeGPUs  json.Number    `json:"before_gpus"`
	AfterGPUs   json.Number    `json:"after_gpus"`
	HeldHours   json.Number    `json:"held_gpu_hours"`
	AfterHours  json.Number    `json:"after_gpu_hours"`
	SavedHours  json.Number    `json:"saved_gpu_hours"`
	Rate        json.Number    `json:"rate_per_gpu_hour"`
	Saving      json.Number    `json:"saving"`
	Released    json.Number    `json:"capacity_released"`
	Moved       json.Number    `json:"cost_moved_between_teams"`
	Contention  contentionJSON `json:"contention"`
	Latency     *latencyJSON   `json:"latency"`
	LatencyNote string         `json:"latency_note"`
	Evidence    []string       `json:"evidence"`
	Incomplete  []string       `json:"incomplete"`
}

type contentionJSON struct {
	Minutes    int     `json:"minutes"`
	Of         int     `json:"of_minutes"`
	MaxExcess  float64 `json:"max_excess_gpus"`
	MeanExcess float64 `json:"mean_excess_gpus"`
}

type latencyJSON struct {
	Mode       string   `json:"mode"`
	ServiceMs  float64  `json:"service_time_ms"`
	RateRPS    float64  `json:"rate_rps_per_replica"`
	TenantsGPU int      `json:"tenants_per_gpu"`
	P50        *float64 `json:"p50_ms"`
	P99        *float64 `json:"p99_ms"`
	ServedPct  *float64 `json:"served_pct"`
}

type migPackingJSON struct {
	GPUModel  string `json:"gpu_model"`
	Instances int    `json:"instances"`
	Slices    int    `json:"slices"`
	GPUs      int    `json:"gpus"`
}

func dec(x *big.Rat, d int) json.Number { return json.Number(x.FloatString(d)) }

func floatNum(x float64, d int) json.Number {
	return json.Number(new(big.Rat).SetFloat64(x).FloatString(d))
}

// num is x*scale for JSON, nil when undefined.
func num(x, scale float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	v := x * scale
	return &v
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// WriteJSON writes the advice as one indented JSON document.
func WriteJSON(w io.Writer, a *Advice) error {
	p, rep := a.Plan, a.Report
	actions, kept := a.Actions()
	doc := adviceJSON{Period: rep.PeriodLabel(), Start: p.From.Format(time.RFC3339), End: p.To.Format(time.RFC3339), Partial: rep.PartialNote(),
		Currency: p.Currency.Code, MinorUnit: p.Currency.MinorUnit, Saving: json.Number(rep.Money(p.SavingMinor)),
		Actions: len(actions), Kept: len(kept),
		Reconciliation: reconcileJSON{ReportTotal: json.Number(rep.Money(rep.Total)), ReportCharges: json.Number(rep.Money(a.Charges)),
			HeldHours: dec(p.HeldHours, 6), HeldAtRates: json.Number(rep.Money(p.ChargedMinor)), Policy: string(rep.Book.Policy)},
		Recommendations: []recommendJSON{}, MIGPacking: []migPackingJSON{}, Problems: append([]string{}, p.Problems...)}
	released, moved := a.split(actions)
	doc.CapacityReleased, doc.CostMoved = json.Number(rep.Money(released)), json.Number(rep.Money(moved))
	for _, r := range p.Recommendations {
		rel, mov := report.SplitSaving(r.SavingMinor, r.BeforeGPUs, r.AfterGPUs)
		j := recommendJSON{Kind: string(r.Kind), Team: r.Team, Namespace: r.Namespace, Workloads: r.Workloads, GPUModel: r.Model,
			Modes: r.Modes, Replicas: r.Replicas, Before: r.Before, After: r.After, BeforeGPUs: floatNum(r.BeforeGPUs, 3),
			AfterGPUs: floatNum(r.AfterGPUs, 3), HeldHours: dec(r.HeldHours, 6), AfterHours: dec(r.AfterHours, 6),
			SavedHours: dec(r.SavedHours, 6), Rate: json.Number(r.Rate.Format(p.Currency.MinorUnit)),
			Saving: json.Number(rep.Money(r.SavingMinor)), Released: json.Number(rep.Money(rel)), Moved: json.Number(rep.Money(mov)),
			Contention:  contentionJSON{r.Contention.Minutes, r.Contention.Of, round6(r.Contention.MaxExcess), round6(r.Contention.MeanExcess)},
			LatencyNote: r.LatencyNote, Evidence: r.Evidence, Incomplete: append([]string{}, r.Incomplete...)}
		if l := r.Latency; l != nil {
			j.Latency = &latencyJSON{Mode: string(l.Mode), ServiceMs: l.ServiceTime.Seconds() * 1e3, RateRPS: round6(l.RatePerReplica),
				TenantsGPU: l.Tenants, P50: num(l.P50, 1e3), P99: num(l.P99, 1e3), ServedPct: num(l.ServedFraction, 100)}
		}
		doc.Recommendations = append(doc.Recommendations, j)
	}
	for _, m := range p.MIG {
		doc.MIGPacking = append(doc.MIGPacking, migPackingJSON{m.Model, m.Instances, m.Slices, m.GPUs})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("cannot write advice JSON: %w", err)
	}
	return nil
}
