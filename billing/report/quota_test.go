package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// quotaDay: one A100 on 2026-11-01 (UTC) in half-hour rows. Team a holds
// it 00:00-12:30 and uses it 00:00-05:00; nobody holds it after.
func quotaDay() []attribution.Row {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var rows []attribution.Row
	for i := 0; i < 48; i++ {
		s := day.Add(time.Duration(i) * 30 * time.Minute)
		base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(30 * time.Minute), Node: "n1", GPUUUID: "GPU-1",
			GPUModel: "A100-SXM4-80GB", SliceID: "GPU-1", SharingMode: "exclusive", Method: "measured"}
		if i < 25 {
			r := base
			r.Kind, r.Namespace, r.Pod, r.PodUID, r.Container, r.Team = attribution.KindContainer, "ns-a", "p-a", "u-a", "c", "a"
			r.AllocatedGPUSeconds = 1800
			if i < 10 {
				r.UsedGPUSeconds = 1800
			}
			rows = append(rows, r, kind(base, attribution.KindUnallocated, 0, 0), kind(base, attribution.KindIdle, 0, 1800-r.UsedGPUSeconds))
			continue
		}
		rows = append(rows, kind(base, attribution.KindUnallocated, 1800, 0), kind(base, attribution.KindIdle, 0, 1800))
	}
	return rows
}

// quotaChanges: team a's Kueue quota is 0.5 GPU from October, 2 GPUs from
// 06:00 and gone at 18:00; team b has a ResourceQuota of seven 1g.10gb
// (one GPU) all day and holds nothing.
func quotaChanges() []quota.Change {
	at := func(h int) time.Time { return time.Date(2026, 11, 1, h, 0, 0, 0, time.UTC) }
	ka := quota.Key{Source: quota.SourceKueue, Object: "cq-a", Resource: "gpu"}
	kb := quota.Key{Source: quota.SourceResourceQuota, Object: "ns-b", Resource: "mig-1g.10gb"}
	return []quota.Change{
		{At: time.Date(2026, 10, 20, 0, 0, 0, 0, time.UTC), Entry: quota.Entry{Key: ka, Team: "a", Milli: 500}},
		{At: time.Date(2026, 10, 21, 0, 0, 0, 0, time.UTC), Entry: quota.Entry{Key: kb, Team: "b", Milli: 7000}},
		{At: at(6), Entry: quota.Entry{Key: ka, Team: "a", Milli: 2000, LimitMilli: 4000}},
		{At: at(18), Entry: quota.Entry{Key: ka, Team: "a"}, Deleted: true},
	}
}

// quotaLedger is the embedded ledger with rows and quota changes.
func quotaLedger(t testing.TB, rows []attribution.Row, changes []quota.Change) *filestore.FileStore {
	t.Helper()
	st := fileLedger(t, rows, nil)
	if err := st.AppendQuota(context.Background(), changes); err != nil {
		t.Fatal(err)
	}
	return st
}

const quotaBook = `currency: USD
timezone: UTC
policy: quota
defaultRate: 2.00
rates: {A100-SXM4-80GB: 2.00}
quota: {source: kueue, rate: 1.50, aboveRate: 3.00}
`

// TestQuotaPolicyByHand works the day out by hand:
//
//	hours 00-06: quota 0.5, held 1   -> above 0.5 x 6 = 3 h
//	hours 06-12: quota 2,   held 1   -> unheld quota 1 x 6 = 6 h
//	hour  12-13: quota 2,   held 0.5 -> unheld 1.5 h
//	hours 13-18: quota 2,   held 0   -> unheld 10 h
//	quota-hours 0.5 x 6 + 2 x 12 = 27 at 1.50 = 40.50; above 3 h at 3.00 = 9.00
//	capacity 24 h x 2.00 = 48.00; platform 48.00 - 49.50 = -1.50
func TestQuotaPolicyByHand(t *testing.T) {
	src := quotaLedger(t, quotaDay(), quotaChanges())
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r, err := Build(context.Background(), src, book(t, quotaBook), from, from.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, rec := range recs[1:] {
		// team, namespace, model, mode, type, allocated, used, rate, amount
		got = append(got, strings.Join([]string{rec[2], rec[3], rec[4], rec[5], rec[6], rec[7], rec[8], rec[11], rec[12]}, ","))
	}
	want := []string{
		"a,,gpu,,quota,27.000000,,1.50,40.50",
		"a,,,,above_quota,3.000000,,3.00,9.00",
		",,,,platform,11.500000,,,-1.50",
		",,,,rounding,,,,0.00",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("finance CSV lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Total != 4800 {
		t.Errorf("total %d cents, want 4800 (24 GPU-hours x 2.00)", r.Total)
	}
	if len(r.Quota.Rows) != 2 {
		t.Fatalf("quota rows %+v, want a/kueue and b/resourcequota", r.Quota.Rows)
	}
	h := func(x int64, y int64) *big.Rat { return big.NewRat(x, y) }
	for _, c := range []struct {
		row                            QuotaRow
		quota, held, used, idle, above *big.Rat
	}{
		{r.Quota.Rows[0], h(27, 1), h(25, 2), h(5, 1), h(35, 2), h(3, 1)},
		{r.Quota.Rows[1], h(24, 1), h(0, 1), h(0, 1), h(24, 1), h(0, 1)},
	} {
		for name, pair := range map[string][2]*big.Rat{"quota": {c.row.QuotaHours, c.quota}, "held": {c.row.HeldHours, c.held},
			"used": {c.row.UsedHours, c.used}, "unheld": {c.row.UnheldQuotaHours, c.idle}, "above": {c.row.AboveHours, c.above}} {
			if pair[0].Cmp(pair[1]) != 0 {
				t.Errorf("%s/%s %s hours = %s, want %s", c.row.Team, c.row.Source, name, pair[0].FloatString(6), pair[1].FloatString(6))
			}
		}
	}
	if r.Quota.Rows[0].Source != quota.SourceKueue || r.Quota.Rows[1].Team != "b" {
		t.Errorf("rows out of order: %+v", r.Quota.Rows)
	}
}

// TestQuotaRenderings: the quota report's HTML, JSON and FOCUS forms
// carry the section and lines, and both FOCUS versions validate.
func TestQuotaRenderings(t *testing.T) {
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r, err := Build(context.Background(), quotaLedger(t, quotaDay(), quotaChanges()), book(t, quotaBook), from, from.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	var html, js bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="quota">`, "<b>kueue</b> quota: quota-hours at 1.50",
		`<td><b>a</b></td><td>kueue</td><td class="muted">gpu 27.0 h</td><td class="num">27.0</td><td class="num">12.5</td><td class="num">5.0</td><td class="num">17.5</td><td class="num">3.0</td>`,
		`<td><b>b</b></td><td>resourcequota</td><td class="muted">mig-1g.10gb 24.0 h</td><td class="num">24.0</td>`,
		"the platform line (-1.50) is the capacity × rate they do not pay"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"billed_source": "kueue"`, `"quota_gpu_hours": 27.000000`, `"above_quota_gpu_hours": 3.000000`,
		`"unheld_quota_gpu_hours": 17.500000`, `"line_type": "above_quota"`, `"total": 48.00`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	for _, v := range []string{focusvalidate.Version13, focusvalidate.Version14} {
		r.FOCUSVersion = v
		var fo bytes.Buffer
		if err := WriteFOCUS(&fo, r); err != nil {
			t.Fatal(err)
		}
		violations, err := focusvalidate.ValidateVersion(bytes.NewReader(fo.Bytes()), v)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range violations {
			t.Errorf("FOCUS %s: %s", v, x)
		}
		rows := readTable(t, fo.Bytes())
		if len(rows) != 4 {
			t.Errorf("FOCUS %s: %d rows, want the 4 lines", v, len(rows))
		}
	}
}
