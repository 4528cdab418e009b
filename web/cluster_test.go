package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// TestClusterParam: a ledger of two clusters whose nodes share names.
// ?cluster=NAME serves that cluster's bill, the fleet's names both with
// their totals adding up to its own, a bad name is a 400, serve
// --cluster is the default view, and /metrics labels the month-to-date
// charges by cluster.
func TestClusterParam(t *testing.T) {
	db, prices := testLedger(t) // the default cluster: one A100 at 2.00 an hour
	st, err := filestore.OpenFile(context.Background(), db, filestore.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same node, GPU and rows in cluster east: 2.00 an hour there too.
	var rows []attribution.Row
	for _, r := range ledgerRowsOf(t, st) {
		r.Cluster = "east"
		rows = append(rows, r)
	}
	if err := st.Append(context.Background(), rows, nil); err != nil {
		t.Fatal(err)
	}
	st.Close()
	srv := newTestServer(t, fileOpener(db), prices)
	bill := func(q string) (int, map[string]any) {
		t.Helper()
		resp, body := fetch(t, srv.URL+"/reports/2026-10.json"+q)
		var j map[string]any
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &j); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, j
	}
	// October: 744 hours at 2.00 an hour in each cluster.
	code, fleet := bill("")
	if code != 200 || fleet["total"] != "2976.00" && fleet["total"] != 2976.0 {
		t.Fatalf("fleet: %d %v, want 2976.00", code, fleet["total"])
	}
	cs, _ := fleet["clusters"].([]any)
	if len(cs) != 2 {
		t.Fatalf("fleet clusters %v, want default and east", fleet["clusters"])
	}
	code, east := bill("?cluster=east")
	if code != 200 || east["cluster"] != "east" || east["total"] != 1488.0 {
		t.Fatalf("east: %d cluster %v total %v, want east 1488.00", code, east["cluster"], east["total"])
	}
	if code, _ := bill("?cluster=East_1"); code != http.StatusBadRequest {
		t.Fatalf("?cluster=East_1: %d, want 400", code)
	}
	srvEast := newTestServer(t, fileOpener(db), prices, func(c *Config) { c.Cluster = "east" })
	resp, body := fetch(t, srvEast.URL+"/reports/2026-10.json")
	if resp.StatusCode != 200 || !strings.Contains(body, `"cluster": "east"`) && !strings.Contains(body, `"cluster":"east"`) {
		t.Fatalf("serve --cluster east: %d, the default view is not east's bill", resp.StatusCode)
	}
	resp, body = fetch(t, srvEast.URL+"/reports/2026-10.json?cluster=")
	if resp.StatusCode != 200 || !strings.Contains(body, `"clusters"`) {
		t.Fatalf("?cluster= on serve --cluster east: %d, not the fleet's bill", resp.StatusCode)
	}
	_, metrics := fetch(t, srv.URL+"/metrics")
	for _, c := range []string{"default", "east"} {
		if !strings.Contains(metrics, `gpuledger_charge_month_to_date{cluster="`+c+`"`) {
			t.Errorf("/metrics has no month-to-date charge of cluster %s", c)
		}
	}
}

// ledgerRowsOf reads every row of st.
func ledgerRowsOf(t *testing.T, st *filestore.FileStore) []attribution.Row {
	t.Helper()
	var out []attribution.Row
	if err := st.Rows(context.Background(), testNow.AddDate(-1, 0, 0), testNow, func(r attribution.Row) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
