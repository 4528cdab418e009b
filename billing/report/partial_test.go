package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A month the ledger covers only up to a day says so in every form but the
// finance CSV, whose columns are fixed; a month it covers wholly does not.
func TestPartialMonthIsMarkedPartial(t *testing.T) {
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"A100": "2"}, "2")
	from, to, _ := Month("2026-11", b.Location)
	dataEnd := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "exclusive", from: from, to: dataEnd}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 1, busy: 0.5, start: from, end: dataEnd}}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), nil)

	r := mustBuild(t, st, b, from, to)
	if !r.Partial() || !r.DataTo.Equal(dataEnd) || !r.DataFrom.Equal(from) {
		t.Fatalf("partial %v, data %s to %s", r.Partial(), r.DataFrom, r.DataTo)
	}
	if note := r.PartialNote(); note != "partial: ledger data 2026-11-01 to 2026-11-24 only" {
		t.Errorf("note %q", note)
	}
	var h, j bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>GPU chargeback 2026-11 (partial)</title>", `<span class="partial">(partial)</span>`, "2026-11-01 to 2026-11-24 only"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Partial bool `json:"partial"`
		Period  struct {
			DataEnd string `json:"data_end"`
		} `json:"period"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Partial || doc.Period.DataEnd != "2026-11-24T00:00:00Z" {
		t.Errorf("JSON partial %v, data_end %q", doc.Partial, doc.Period.DataEnd)
	}

	whole := mustBuild(t, st, b, from, dataEnd)
	whole.GeneratedAt = dataEnd.Add(time.Hour)
	if whole.Partial() || whole.PartialNote() != "" {
		t.Errorf("the covered range is marked partial: %q", whole.PartialNote())
	}
	// A period that has not ended when the report is made is partial even
	// where the data reaches its last day.
	whole.GeneratedAt = dataEnd.Add(-time.Hour)
	if !whole.Partial() || !strings.Contains(whole.PartialNote(), "to 2026-11-23 23:00 UTC only") {
		t.Errorf("a period still running: %v %q", whole.Partial(), whole.PartialNote())
	}
}
