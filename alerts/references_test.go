package alerts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/tokencost"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/dashboards"
	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/kubequota"
	"github.com/gpuledger/gpuledger/tenancy"
	"github.com/gpuledger/gpuledger/web"
)

// targetLabels are labels Prometheus itself may put on any scraped series:
// the scrape target's, and cluster as a target or external label.
var targetLabels = map[string]bool{"cluster": true, "job": true, "instance": true}

// memoryFinding gives a memory_growth finding its figures, so that all its
// series are served.
func memoryFinding(f attribution.Finding) attribution.Finding {
	f.Memory = &attribution.MemoryGrowth{Scope: attribution.MemoryScopeGPU, Severity: attribution.SeverityWarning, Device: "GPU-a",
		RateMiBPerMin: 60, DeviceMiB: 81920, UsedMiB: 40000, ExhaustionSeconds: 41920 * 60}
	return f
}

// exported are the metric families a real Exporter serves, with the label
// names each carries, after one Update that exercises every family:
// containers on a whole GPU and on a MIG instance, every finding, every
// health series.
func exported(t *testing.T) map[string]map[string]bool {
	t.Helper()
	exp := exposition.New("node-1", exposition.Options{BuildVersion: "test", BuildRevision: "test",
		Prices: []exposition.Price{{Model: "A100-SXM4-80GB", Currency: "USD", PerGPUHour: 2.4}}})
	start := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	end := start.Add(time.Second)
	ctr := attribution.ContainerCycle{
		SliceID: "GPU-a::0", SharingMode: string(tenancy.Timeslicing), Namespace: "ns", Pod: "p", PodUID: "u1",
		Container: "c", Team: "t", Method: attribution.MethodMeasured, Share: 0.5, Allocated: 0.5, Used: 0.4,
		MemoryMiB: 100, MemoryMiBs: 100, Energy: 10, Running: true,
	}
	mig := ctr
	mig.SliceID, mig.SharingMode, mig.Pod, mig.PodUID, mig.Method = "MIG-b", string(tenancy.MIG), "q", "u2", attribution.MethodEstimated
	find := func(kind string) attribution.Finding {
		return attribution.Finding{Start: start, End: end, Kind: kind, Node: "node-1", GPUUUID: "GPU-a",
			Namespace: "ns", Pod: "p", Container: "c", Team: "t", NoisyPod: "ns/q"}
	}
	res := attribution.CycleResult{
		Start: start, End: end,
		GPUs: []attribution.GPUCycle{
			{UUID: "GPU-a", Model: "A100-SXM4-80GB", Capacity: 1, Unallocated: 0.5, Unattributed: 0.1, Idle: 0.5, EnergyJoules: 20,
				Containers: []attribution.ContainerCycle{ctr}},
			{UUID: "GPU-b", Model: "A100-SXM4-80GB", Capacity: 1, Unallocated: 0.5, Unattributed: 0, Idle: 0.6, EnergyJoules: 20,
				Containers: []attribution.ContainerCycle{mig}},
		},
		Active: []attribution.Finding{
			find(attribution.FindingIdleAllocation), find(attribution.FindingNoisyNeighbour), find(attribution.FindingStarved),
			memoryFinding(find(attribution.FindingMemoryGrowth)),
		},
		Anomalies: []attribution.Anomaly{{Kind: "bad_device_id", Key: "x"}},
	}
	meta := exposition.CycleMeta{
		GPUs: []attribution.GPU{
			{Index: 0, UUID: "GPU-a", Model: "A100-SXM4-80GB"},
			{Index: 1, UUID: "GPU-b", Model: "A100-SXM4-80GB", MIGEnabled: true,
				MIG: []attribution.MIGInstance{{UUID: "MIG-b", Profile: "3g.40gb", Slices: 3}}},
		},
		CycleDuration: time.Millisecond,
		SourceUp:      map[string]bool{"nvml": true, "dcgm": false, "podresources": true, "kubemeta": true, "procfs": true},
		SourceErrors:  map[string]uint64{"dcgm": 1},
		Anomalies:     map[string]uint64{"bad_device_id": 1},

		LedgerRowsWritten: 1, OutboxPending: 1, OutboxOldestAge: time.Second,
	}
	exp.Update(res, meta)
	mfs, err := exp.Registry().Gather()
	if err != nil {
		t.Fatalf("cannot gather the exposition: %v", err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		out[mf.GetName()] = ls
	}
	return out
}

// expression is one PromQL expression to check, named for failures.
type expression struct {
	where, expr string
}

func ruleExpressions(t *testing.T) (exprs []expression, recorded map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	recorded = map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, expression{where: RulesFile + " " + r.Name(), expr: r.Expr})
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	return exprs, recorded
}

func dashboardExpressions(t *testing.T) []expression {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "dashboards", "json", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards under ../dashboards/json (err %v)", err)
	}
	var out []expression
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := dashboards.QueriesFromJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, q := range qs {
			expr, err := dashboards.Expand(q.Expr, dashboards.TestValues())
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			out = append(out, expression{where: q.String(), expr: expr})
		}
	}
	return out
}

// selectors parses expr and returns its vector selectors.
func selectors(expr string) ([]*parser.VectorSelector, error) {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out, nil
}

// names resolves the metric names a selector reads among known: its name,
// or every known name its __name__ matchers accept.
func names(vs *parser.VectorSelector, known []string) ([]string, error) {
	if vs.Name != "" {
		return []string{vs.Name}, nil
	}
	var ms []*labels.Matcher
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("selector %s names no metric", vs)
	}
	var out []string
	for _, n := range known {
		if all(ms, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("selector %s matches no exported metric", vs)
	}
	return out, nil
}

func all(ms []*labels.Matcher, v string) bool {
	for _, m := range ms {
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// TestEveryQueryReadsExportedSeries parses every PromQL expression of the
// dashboards and the rule file and checks that each metric it reads is
// exported by the collector (or recorded by a rule, or up, or pending in
// another issue), and that each label it filters on exists on that metric.
func TestEveryQueryReadsExportedSeries(t *testing.T) {
	fams := exported(t)
	advice := adviceFamilies(t)
	// serve --quota's gauges count with the advice's: served by another
	// process than the collector.
	for n, ls := range quotaFamilies(t) {
		advice[n] = ls
	}
	// serve's coverage gap series, one per node.
	for _, n := range web.CoverageMetricNames() {
		advice[n] = map[string]bool{"node": true}
	}
	ruleExprs, recorded := ruleExpressions(t)
	known := make([]string, 0, len(fams)+len(advice)+len(recorded)+1)
	for n := range fams {
		known = append(known, n)
	}
	for n := range advice {
		known = append(known, n)
	}
	for n := range recorded {
		known = append(known, n)
	}
	known = append(known, "up")
	// The inference servers' token counters the cost per token rules join.
	known = append(known, tokencost.MetricNames()...)
	sort.Strings(known)

	exprs := append(ruleExprs, dashboardExpressions(t)...)
	if len(exprs) < 50 {
		t.Fatalf("only %d expressions found; the dashboards or rules were not read", len(exprs))
	}
	read := map[string]bool{}
	for _, e := range exprs {
		vss, err := selectors(e.expr)
		if err != nil {
			t.Errorf("%s: cannot parse %q: %v", e.where, e.expr, err)
			continue
		}
		for _, vs := range vss {
			ns, err := names(vs, known)
			if err != nil {
				t.Errorf("%s: %v", e.where, err)
				continue
			}
			for _, n := range ns {
				read[n] = true
				if !slices.Contains(known, n) {
					t.Errorf("%s: reads %s, which the collector does not export and no rule records", e.where, n)
					continue
				}
				famLabels := fams[n]
				if famLabels == nil {
					famLabels = advice[n]
				}
				checkLabels(t, e.where, vs, famLabels)
			}
		}
	}
	// Every family of the contract is shown somewhere.
	for n := range fams {
		if strings.HasPrefix(n, "gpuledger_") && !read[n] {
			t.Errorf("exported family %s is read by no dashboard or rule", n)
		}
	}
}

// checkLabels fails for a matcher on a label the family does not carry:
// such a filter silently matches the missing label's empty value.
func checkLabels(t *testing.T, where string, vs *parser.VectorSelector, famLabels map[string]bool) {
	t.Helper()
	if famLabels == nil {
		return // recorded, up or pending: label sets are not known here
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName || targetLabels[m.Name] || famLabels[m.Name] {
			continue
		}
		t.Errorf("%s: selector %s filters on %q, which %s does not carry", where, vs, m.Name, vs.Name)
	}
}

// TestReferenceCheckCatchesUnknownSeries feeds the checker's parts
// expressions that must fail.
func TestReferenceCheckCatchesUnknownSeries(t *testing.T) {
	known := []string{"gpuledger_gpu_capacity_seconds_total", "up"}
	for _, expr := range []string{
		`rate(gpuledger_gpu_capacity_second_total[5m])`,
		`sum(rate({__name__="gpuledger_nope"}[5m]))`,
		`{__name__=~"gpuledger_x.*"}`,
	} {
		vss, err := selectors(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		bad := false
		for _, vs := range vss {
			ns, err := names(vs, known)
			if err != nil {
				bad = true
				continue
			}
			for _, n := range ns {
				if !slices.Contains(known, n) {
					bad = true
				}
			}
		}
		if !bad {
			t.Errorf("%q passed the reference check", expr)
		}
	}
	vss, err := selectors(`{__name__=~"gpuledger_gpu_.*"} or up`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, vs := range vss {
		ns, err := names(vs, known)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ns...)
	}
	if want := []string{"gpuledger_gpu_capacity_seconds_total", "up"}; !slices.Equal(got, want) {
		t.Errorf("names = %v, want %v", got, want)
	}
}

// adviceFamilies are the gpuledger_advice_* families `gpuledger advise
// --format prom` writes and `advise --listen` serves besides (through
// adviceprom, the writer the command uses), with their labels: what the
// advice dashboard and the advice alert may read.
func adviceFamilies(t *testing.T) map[string]map[string]bool {
	t.Helper()
	plan := &advise.Plan{
		From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Currency: pricebook.Currency{Code: "USD", MinorUnit: 2},
		Recommendations: []advise.Recommendation{{Kind: advise.Reclaim, Team: "t", Namespace: "ns",
			Workloads: []string{"ns/w"}, Model: "A100-SXM4-80GB", SavingMinor: 100, BeforeGPUs: 1}},
		SavingMinor: 100,
	}
	var buf bytes.Buffer
	if err := adviceprom.Write(&buf, plan); err != nil {
		t.Fatalf("cannot write the advice series: %v", err)
	}
	if err := adviceprom.WriteRefresh(&buf, plan.To, 1); err != nil {
		t.Fatalf("cannot write the advice refresh series: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("cannot parse the advice series: %v", err)
	}
	out := map[string]map[string]bool{}
	for name, mf := range mfs {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		out[name] = ls
	}
	if len(out) < 5 {
		t.Fatalf("only %d advice families: %v", len(out), out)
	}
	return out
}

// quotaFamilies are the families serve --quota's collector serves
// (quota/kubequota), with their labels: what the quota rules and panel
// may read.
func quotaFamilies(t *testing.T) map[string]map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(kubequota.NewCollector(func() []quota.Entry {
		return []quota.Entry{{Key: quota.Key{Source: quota.SourceKueue, Object: "cq", Resource: "gpu"}, Team: "t", Milli: 1000, LimitMilli: 2000}}
	}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("cannot gather the quota series: %v", err)
	}
	out := map[string]map[string]bool{}
	for _, mf := range mfs {
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = true
			}
		}
		out[mf.GetName()] = ls
	}
	if len(out) != 2 {
		t.Fatalf("quota families %v, want the quota and its limit", out)
	}
	return out
}
