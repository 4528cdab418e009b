package web

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/ledger/filestore"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
)

// TestClosedMonthIsStored: October (744 h of an A100 at 2.00, 1,488.00)
// is closed; the price book then says 3.00. October's page and every
// download are the stored bytes, the index shows 1,488.00 marked closed,
// and ten hours of another A100 that reach the ledger late are billed in
// November as an adjustment of October at its closing price, 20.00.
func TestClosedMonthIsStored(t *testing.T) {
	ctx := context.Background()
	db, prices := testLedger(t)
	bookBytes, err := os.ReadFile(prices)
	if err != nil {
		t.Fatal(err)
	}
	book, err := pricebook.Parse(prices, bookBytes)
	if err != nil {
		t.Fatal(err)
	}
	st, err := filestore.OpenFile(ctx, db, filestore.FileOptions{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := report.CloseMonth(ctx, st, st, book, bookBytes, "2026-10", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	hs := newTestServer(t, fileOpener(db), prices)
	if err := os.WriteFile(prices, []byte(strings.Replace(testBook, "2.00", "3.00", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for suffix, name := range map[string]string{"": "html", ".csv": "csv", ".json": "json", ".focus.csv": "focus"} {
		resp, body := fetch(t, hs.URL+"/reports/2026-10"+suffix)
		if suffix == "" {
			body = string(WithoutNav([]byte(body))) // the stored page in serve's header
		}
		if resp.StatusCode != 200 || body != string(c.Files[name]) || !strings.Contains(resp.Header.Get("X-Gpuledger-Closed"), c.Digest) {
			t.Errorf("/reports/2026-10%s: %d, header %q, %d bytes; want the %d stored bytes", suffix, resp.StatusCode,
				resp.Header.Get("X-Gpuledger-Closed"), len(body), len(c.Files[name]))
		}
	}
	if _, body := fetch(t, hs.URL+"/reports/2026-10.json"); !strings.Contains(body, `"total": 1488.00`) {
		t.Errorf("closed October's JSON:\n%.300s", body)
	}
	_, index := fetch(t, hs.URL+"/")
	for _, want := range []string{"<b>1,488.00</b>", `>closed</span>`} {
		if !strings.Contains(index, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if _, body := fetch(t, hs.URL+"/reports/2026-11.json"); strings.Contains(body, "adjustments") {
		t.Errorf("November bills adjustments with no late rows:\n%s", body)
	}

	var late []attribution.Row
	for h := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC); h.Before(time.Date(2026, 10, 5, 10, 0, 0, 0, time.UTC)); h = h.Add(time.Hour) {
		r := attribution.Row{IntervalStart: h, IntervalEnd: h.Add(time.Hour), Node: "n2", GPUUUID: "GPU-2", GPUModel: "A100-SXM4-80GB",
			SliceID: "GPU-2", SharingMode: "exclusive", Method: "measured", Kind: attribution.KindContainer, Namespace: "ml", Pod: "late-0",
			PodUID: "uid-2", Container: "main", Team: "ml", AllocatedGPUSeconds: 3600, UsedGPUSeconds: 3600}
		late = append(late, r)
	}
	if err := st.Append(ctx, late, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	// Written to a new price book version: the server builds November anew.
	if err := os.WriteFile(prices, []byte(strings.Replace(testBook, "2.00", "3.000", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, body := fetch(t, hs.URL+"/reports/2026-11.json"); !strings.Contains(body, `"adjustments_total": 20.00`) || !strings.Contains(body, `"adjusts_period": "2026-10"`) {
		t.Errorf("November after late October rows:\n%s", body)
	}
	if resp, body := fetch(t, hs.URL+"/reports/2026-10.csv"); body != string(c.Files["csv"]) {
		t.Errorf("October's CSV moved after late rows: %d\n%s", resp.StatusCode, body)
	}
}
