// Package advicereport turns the sharing advisor's plan for a period into
// what people and programs read: text, JSON, an HTML page styled like the
// chargeback report, the gpuledger_advice_* series, and the savings
// section of the report. It also reads pod metadata (kubectl get pods -A
// -o json) for the advisor. It is to advisor/advise what billing/report's
// writers are to the chargeback: the commands only wire it.
package advicereport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// Source is what advice reads from a ledger: the report's aggregates and
// findings, and the container rows.
type Source interface {
	report.Source
	ContainerRows(ctx context.Context, from, to time.Time, fn func(attribution.Row) error) error
}

// Advice is a plan and the chargeback it reconciles with.
type Advice struct {
	Plan   *advise.Plan
	Report *report.Report
	// Charges is the report's charge lines added up: what teams paid for
	// the GPU-hours their containers held (allocation) or used (usage);
	// under policy quota their quota and above-quota lines.
	Charges int64
}

// Build builds the chargeback of [from, to) and advises on it.
func Build(ctx context.Context, st Source, book *pricebook.Book, from, to time.Time, pods []advise.Pod, opt advise.Options) (*Advice, error) {
	rep, err := report.Build(ctx, st, book, from, to)
	if err != nil {
		return nil, err
	}
	return For(ctx, st, book, rep, pods, opt)
}

// For advises on a built report's period (report --advice reuses the
// report it is about to write).
func For(ctx context.Context, st Source, book *pricebook.Book, rep *report.Report, pods []advise.Pod, opt advise.Options) (*Advice, error) {
	a, err := advise.New(rep.From, rep.To, pods, opt)
	if err != nil {
		return nil, err
	}
	// Only container rows count, and only some of their columns:
	// ContainerRows reads a month of a 100-GPU fleet several times
	// faster than Rows.
	if err := st.ContainerRows(ctx, rep.From, rep.To, a.AddRow); err != nil {
		return nil, fmt.Errorf("cannot read ledger rows: %w", err)
	}
	if err := st.Findings(ctx, rep.From, rep.To, a.AddFinding); err != nil {
		return nil, fmt.Errorf("cannot read ledger findings: %w", err)
	}
	plan, err := a.PlanContext(ctx, book)
	if err != nil {
		return nil, err
	}
	res := &Advice{Plan: plan, Report: rep}
	for _, l := range rep.Lines {
		if l.Type == report.LineCharge || l.Type == report.LineQuota || l.Type == report.LineAboveQuota {
			res.Charges += l.Amount
		}
	}
	return res, nil
}

// Actions are the recommendations that change something, largest saving
// first; Kept those that keep a workload as it is.
func (a *Advice) Actions() (actions, kept []advise.Recommendation) {
	for _, r := range a.Plan.Recommendations {
		if r.Kind == advise.Keep {
			kept = append(kept, r)
		} else {
			actions = append(actions, r)
		}
	}
	return actions, kept
}

// split is the saving of actions as capacity released (whole GPUs freed:
// money the company stops spending) and cost that moves between teams
// (report.SplitSaving), each action split on its own and the parts added:
// every output (HTML, text, JSON) says the same two sums.
func (a *Advice) split(actions []advise.Recommendation) (released, moved int64) {
	for _, r := range actions {
		rel, mov := report.SplitSaving(r.SavingMinor, r.BeforeGPUs, r.AfterGPUs)
		released, moved = released+rel, moved+mov
	}
	return released, moved
}

// WriteProm writes the advice as Prometheus text exposition (the
// gpuledger_advice_* series; adviceprom says which).
func WriteProm(w io.Writer, a *Advice) error { return adviceprom.Write(w, a.Plan) }

// Savings is the report's view of a plan (report --advice).
func Savings(p *advise.Plan) *report.Savings {
	s := &report.Savings{Total: p.SavingMinor, Problems: p.Problems}
	for _, r := range p.Recommendations {
		x := report.Saving{Kind: string(r.Kind), Team: r.Team, Namespace: r.Namespace, GPUModel: r.Model, Workloads: r.Workloads,
			Before: r.Before, After: r.After, BeforeGPUs: r.BeforeGPUs, AfterGPUs: r.AfterGPUs, SavedHours: r.SavedHours,
			Amount: r.SavingMinor, ContentionMinutes: r.Contention.Minutes, OfMinutes: r.Contention.Of, Incomplete: r.Incomplete,
			Latency: r.LatencyNote}
		if l := r.Latency; l != nil && !math.IsNaN(l.P99) {
			x.Latency = fmt.Sprintf("p50 %s ms, p99 %s ms (%s, %s)", MS(l.P50), MS(l.P99), l.Mode, r.LatencyNote)
		}
		s.Recommendations = append(s.Recommendations, x)
	}
	return s
}

// MS writes seconds as milliseconds, "-" when undefined.
func MS(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x*1e3, 'f', 2, 64)
}

// maxPodsFile bounds the pods file read into memory.
const maxPodsFile = 512 << 20

// LoadPods reads `kubectl get pods -A -o json` (a List of Pods).
func LoadPods(path string) ([]advise.Pod, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read pods file: %w", err)
	}
	if st.Size() > maxPodsFile {
		return nil, fmt.Errorf("pods file %s: %d bytes, more than %d", path, st.Size(), maxPodsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read pods file: %w", err)
	}
	return ParsePods(path, data)
}

// ParsePods reads the pods of a kubectl List (or PodList): names,
// annotations and the controlling owner.
func ParsePods(name string, data []byte) ([]advise.Pod, error) {
	var doc corev1.PodList
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("pods file %s: want the output of kubectl get pods -A -o json: %w", name, err)
	}
	if doc.Kind != "" && doc.Kind != "List" && doc.Kind != "PodList" {
		return nil, fmt.Errorf("pods file %s: kind %q, want a List of Pods", name, doc.Kind)
	}
	out := make([]advise.Pod, 0, len(doc.Items))
	for i := range doc.Items {
		m := &doc.Items[i].ObjectMeta
		if m.Name == "" || m.Namespace == "" {
			return nil, fmt.Errorf("pods file %s: item %d has no name or namespace", name, i)
		}
		p := advise.Pod{Namespace: m.Namespace, Name: m.Name, Annotations: m.Annotations}
		if o := metav1.GetControllerOf(m); o != nil {
			p.Owner = o.Kind + "/" + o.Name
		}
		out = append(out, p)
	}
	return out, nil
}
