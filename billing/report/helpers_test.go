package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// book parses a price book for a test.
func book(t testing.TB, yaml string) *pricebook.Book {
	t.Helper()
	b, err := pricebook.Parse("test-prices.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func bookFor(t testing.TB, currency, zone, policy, idle string, rates map[string]string, def string) *pricebook.Book {
	y := fmt.Sprintf("currency: %s\ntimezone: %s\npolicy: %s\nidle: %s\ndefaultRate: %s\nrates:\n", currency, zone, policy, idle, def)
	for m, r := range rates {
		y += fmt.Sprintf("  %q: %s\n", m, r)
	}
	return book(t, y)
}

// memSource is an independent, simple Source: it sums rows per local
// calendar day with a map, the way a reader would by hand.
type memSource struct {
	keepsNone
	rows     []attribution.Row
	findings []attribution.Finding
}

func (m *memSource) Aggregate(_ context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.Bucket != ledger.BucketDay {
		return nil, fmt.Errorf("memSource: bucket %q", q.Bucket)
	}
	type key struct {
		day                         string
		team, ns, model, mode, kind string
		node                        string // ByNode only
	}
	sums := map[key]*ledger.Aggregate{}
	for _, r := range m.rows {
		if r.IntervalStart.Before(q.From) || !r.IntervalStart.Before(q.To) {
			continue
		}
		l := r.IntervalStart.In(q.Location)
		k := key{l.Format("2006-01-02"), r.Team, r.Namespace, r.GPUModel, r.SharingMode, string(r.Kind), ""}
		if q.ByNode {
			k.node = r.Node
		}
		a := sums[k]
		if a == nil {
			y, mo, d := l.Date()
			a = &ledger.Aggregate{BucketStart: time.Date(y, mo, d, 0, 0, 0, 0, q.Location), Team: r.Team, Namespace: r.Namespace,
				GPUModel: r.GPUModel, Mode: r.SharingMode, Kind: r.Kind, Node: k.node}
			sums[k] = a
		}
		a.AllocatedSeconds += r.AllocatedGPUSeconds
		a.UsedSeconds += r.UsedGPUSeconds
		a.EnergyJoules += r.EnergyJoules
		a.MemoryMiBSeconds += r.MemoryMiBSeconds
		a.Rows++
	}
	out := make([]ledger.Aggregate, 0, len(sums))
	for _, a := range sums {
		out = append(out, *a)
	}
	return out, nil
}

func (m *memSource) Findings(_ context.Context, from, to time.Time, fn func(attribution.Finding) error) error {
	for _, f := range m.findings {
		if f.End.After(from) && f.Start.Before(to) {
			if err := fn(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepsNone is a test source's declaration that it keeps no quota
// changes, no node labels and no coverage holes (Build requires a source to say): a report
// of it has no quota section unless billed by quota, and every node takes
// the book's intensity by name or its default.
type keepsNone struct{}

func (keepsNone) QuotaChanges(context.Context, time.Time, time.Time, func(quota.Change) error) error {
	return nil
}

func (keepsNone) Coverage(context.Context, time.Time, time.Time) (ledger.Coverage, error) {
	return ledger.Coverage{}, nil
}

func (keepsNone) NodeLabels(context.Context, string, time.Time) (map[string]string, error) {
	return map[string]string{}, nil
}

// fileLedger writes rows and findings to a fresh embedded ledger.
func fileLedger(t testing.TB, rows []attribution.Row, findings []attribution.Finding) *filestore.FileStore {
	t.Helper()
	ctx := context.Background()
	st, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const batch = 50_000
	for i := 0; i < len(rows); i += batch {
		j := min(i+batch, len(rows))
		var fs []attribution.Finding
		if j == len(rows) {
			fs = findings
		}
		if err := st.Append(ctx, rows[i:j], fs); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) == 0 && len(findings) > 0 {
		if err := st.Append(ctx, nil, findings); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// gpu is one simulated GPU, observed for whole intervals [from, to).
type gpu struct {
	node, uuid, model, mode string
	from, to                time.Time
	unattributed            float64 // fraction of each interval busy with no container
}

// tenant holds slots/share of a GPU from start to end.
type tenant struct {
	gpu                      int
	ns, pod, container, team string
	share                    float64 // allocation share a(c)
	busy                     float64 // used / allocated
	memMiB                   float64 // GPU memory held while it runs
	start, end               time.Time
	// teamFrom switches the team label at this instant (zero: never).
	teamFrom time.Time
	newTeam  string
}

// ledgerRows writes the ledger a collector would for these GPUs and
// tenants, interval by interval, keeping both partitions of ledger.md.
func ledgerRows(gpus []gpu, tenants []tenant, step time.Duration) []attribution.Row {
	var rows []attribution.Row
	d := step.Seconds()
	byGPU := map[int][]int{}
	for ti, tn := range tenants {
		byGPU[tn.gpu] = append(byGPU[tn.gpu], ti)
	}
	for gi, g := range gpus {
		for s := g.from; s.Before(g.to); s = s.Add(step) {
			e := s.Add(step)
			base := attribution.Row{IntervalStart: s, IntervalEnd: e, Node: g.node, GPUUUID: g.uuid, GPUModel: g.model,
				SliceID: g.uuid, SharingMode: g.mode, Method: attribution.MethodMeasured}
			var alloc, used float64
			for _, ti := range byGPU[gi] {
				tn := tenants[ti]
				ov := overlap(s, e, tn.start, tn.end)
				if ov <= 0 {
					continue
				}
				c := base
				c.Kind, c.Namespace, c.Pod, c.Container = attribution.KindContainer, tn.ns, tn.pod, tn.container
				c.PodUID, c.SliceID = fmt.Sprintf("uid-%d", ti), fmt.Sprintf("%s::%d", g.uuid, ti)
				c.Team = tn.team
				if !tn.teamFrom.IsZero() && !s.Before(tn.teamFrom) {
					c.Team = tn.newTeam
				}
				c.AllocatedGPUSeconds = tn.share * ov
				c.UsedGPUSeconds = math.Min(tn.busy*tn.share*ov, d-used-g.unattributed*d)
				c.EnergyJoules = 300 * c.UsedGPUSeconds
				c.MemoryMiBSeconds = tn.memMiB * ov
				alloc += c.AllocatedGPUSeconds
				used += c.UsedGPUSeconds
				rows = append(rows, c)
			}
			un, ua, id := base, base, base
			un.Kind, un.AllocatedGPUSeconds = attribution.KindUnallocated, d-alloc
			ua.Kind, ua.UsedGPUSeconds, ua.EnergyJoules = attribution.KindUnattributed, g.unattributed*d, 250*g.unattributed*d
			id.Kind, id.UsedGPUSeconds = attribution.KindIdle, d-used-ua.UsedGPUSeconds
			id.EnergyJoules = 60 * id.UsedGPUSeconds
			rows = append(rows, un, ua, id)
		}
	}
	return rows
}

func overlap(s, e, a, b time.Time) float64 {
	if a.After(s) {
		s = a
	}
	if b.Before(e) {
		e = b
	}
	if !e.After(s) {
		return 0
	}
	return e.Sub(s).Seconds()
}

// capacitySeconds is, independently of any partition, the seconds each
// model's GPUs were observed in [from, to): whole intervals starting there.
func capacitySeconds(gpus []gpu, step time.Duration, from, to time.Time) map[string]int64 {
	out := map[string]int64{}
	for _, g := range gpus {
		for s := g.from; s.Before(g.to); s = s.Add(step) {
			if !s.Before(from) && s.Before(to) {
				out[g.model] += int64(step / time.Second)
			}
		}
	}
	return out
}

// flatCapacity is, per model, the slot-months its GPUs were observed in
// [from, to): each whole interval's seconds over the seconds of the
// calendar month (in loc) its start falls in.
func flatCapacity(gpus []gpu, step time.Duration, from, to time.Time, loc *time.Location) map[string]*big.Rat {
	out := map[string]*big.Rat{}
	for _, g := range gpus {
		for s := g.from; s.Before(g.to); s = s.Add(step) {
			if s.Before(from) || !s.Before(to) {
				continue
			}
			l := s.In(loc)
			first := time.Date(l.Year(), l.Month(), 1, 0, 0, 0, 0, loc)
			month := int64(first.AddDate(0, 1, 0).Sub(first) / time.Second)
			if out[g.model] == nil {
				out[g.model] = new(big.Rat)
			}
			out[g.model].Add(out[g.model], big.NewRat(int64(step/time.Second), month))
		}
	}
	return out
}

// expectedFlat is round(sum over models of slot-months x slot price).
func expectedFlat(t testing.TB, b *pricebook.Book, slotMonths map[string]*big.Rat) (total int64, perModel map[string]int64) {
	t.Helper()
	perModel = map[string]int64{}
	scale := new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(b.Currency.MinorUnit)), nil), big.NewInt(1))
	sum := new(big.Rat)
	for m, sm := range slotMonths {
		price, ok := b.SlotRateFor(m)
		if !ok {
			t.Fatalf("no slot price for %s", m)
		}
		x := new(big.Rat).Mul(sm, price.Rat())
		x.Mul(x, scale)
		sum.Add(sum, x)
		perModel[m] = roundRef(x)
	}
	return roundRef(sum), perModel
}

// expectedTotal is round(sum over models of capacity hours x rate) in
// minor units, computed with big.Rat from the rates' text.
func expectedTotal(t testing.TB, b *pricebook.Book, capSecs map[string]int64) (total int64, perModel map[string]int64) {
	t.Helper()
	perModel = map[string]int64{}
	scale := new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(b.Currency.MinorUnit)), nil), big.NewInt(1))
	sum := new(big.Rat)
	for m, s := range capSecs {
		rate, _ := b.RateFor(m)
		x := new(big.Rat).Mul(big.NewRat(s, 3600), rate.Rat())
		x.Mul(x, scale)
		sum.Add(sum, x)
		perModel[m] = roundRef(x)
	}
	return roundRef(sum), perModel
}

// roundRef rounds half away from zero through the decimal text, a route
// independent of the code under test.
func roundRef(x *big.Rat) int64 {
	var v int64
	fmt.Sscan(x.FloatString(0), &v)
	return v
}

func sortedTeams(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// csvRecords is the report's finance CSV, header first, read as
// docs/report.md tells readers to: coverage gap records ('#') skipped.
func csvRecords(t testing.TB, r *Report) [][]string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	cr := csv.NewReader(&buf)
	cr.Comment = '#'
	recs, err := cr.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func mustBuild(t testing.TB, src Source, b *pricebook.Book, from, to time.Time) *Report {
	t.Helper()
	r, err := Build(context.Background(), src, b, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ratF(x *big.Rat) float64 {
	if x == nil {
		return 0
	}
	f, _ := x.Float64()
	return f
}
