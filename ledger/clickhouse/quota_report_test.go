package clickhouse

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger/filestore"
	"github.com/gpuledger/gpuledger/quota"
)

// TestQuotaReportMatchesEmbedded: the same rows and quota changes in the
// embedded ledger and in ClickHouse give byte-identical policy quota
// reports (finance CSV and JSON, quota section included) in a zone 5:30
// from UTC, so the cluster ledger bills quota as the file does.
func TestQuotaReportMatchesEmbedded(t *testing.T) {
	ctx := context.Background()
	ch, _ := openTest(t)
	file, err := filestore.OpenFile(ctx, filepath.Join(t.TempDir(), "ledger.db"), filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rows := fleet(11, 2, 2, 2*24*60, start)
	appendAll(t, ch, rows, 20000)
	if err := file.Append(ctx, rows, nil); err != nil {
		t.Fatal(err)
	}
	at := func(h int) time.Time { return start.Add(time.Duration(h)*time.Hour + 17*time.Second) }
	k := func(src, obj, res string) quota.Key { return quota.Key{Source: src, Object: obj, Resource: res} }
	changes := []quota.Change{
		{At: start.AddDate(0, 0, -3), Entry: quota.Entry{Key: k(quota.SourceKueue, "cq-ml", "gpu"), Team: "ml", Milli: 1500}},
		{At: at(7), Entry: quota.Entry{Key: k(quota.SourceKueue, "cq-ml", "gpu"), Team: "ml", Milli: 3000, LimitMilli: 4000}},
		{At: at(9), Entry: quota.Entry{Key: k(quota.SourceKueue, "cq-search", "mig-3g.40gb"), Team: "search", Milli: 2000}},
		{At: at(30), Entry: quota.Entry{Key: k(quota.SourceKueue, "cq-ml", "gpu"), Team: "ml"}, Deleted: true},
		{At: at(2), Entry: quota.Entry{Key: k(quota.SourceVolcano, "ads", "gpu"), Team: "ads", Milli: 1000}},
	}
	for _, st := range []quota.Store{ch, file} {
		if err := st.AppendQuota(ctx, changes); err != nil {
			t.Fatal(err)
		}
	}
	bk, err := pricebook.Parse("prices.yaml", []byte("currency: USD\ntimezone: Asia/Kolkata\npolicy: quota\ndefaultRate: 2.00\nquota: {source: kueue, rate: 1.75, aboveRate: 2.90}\n"))
	if err != nil {
		t.Fatal(err)
	}
	from, to := start.Add(3*time.Hour), start.Add(45*time.Hour)
	render := func(src report.Source) (string, string) {
		r, err := report.Build(ctx, src, bk, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if r.Quota == nil || len(r.Quota.Rows) < 3 {
			t.Fatalf("quota section %+v: want rows for ml, search and ads", r.Quota)
		}
		var c, j bytes.Buffer
		if err := report.WriteCSV(&c, r); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteJSON(&j, r); err != nil {
			t.Fatal(err)
		}
		return c.String(), j.String()
	}
	wc, wj := render(file)
	gc, gj := render(ch)
	if gc != wc {
		t.Errorf("finance CSV differs:\nClickHouse\n%s\nembedded\n%s", gc, wc)
	}
	if gj != wj {
		t.Errorf("JSON differs between ClickHouse and the embedded ledger")
	}
}
