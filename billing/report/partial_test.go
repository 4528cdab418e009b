package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strconv"
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

// contractCSVColumns are the finance CSV's columns as the contract fixes
// them, in order: what gpuledger adds comes after them.
var contractCSVColumns = []string{"period_start", "period_end", "team", "namespace", "gpu_model", "sharing_mode", "line_type",
	"allocated_gpu_hours", "used_gpu_hours", "efficiency", "energy_kwh", "rate_per_gpu_hour", "amount", "currency"}

// A month whose ledger starts on the 20th and stops at 14:37 on the 24th is
// marked partial inside every file, with the last row's own end (not its
// day's), and a time-slicing tenant that used 0.8 of a GPU while holding
// 0.5 shows the 0.3 it borrowed beside its efficiency of 1.6. The CSV keeps
// the contract's columns where they were.
func TestPartialAndBorrowedAreInsideEveryFile(t *testing.T) {
	b := bookFor(t, "USD", "UTC", "allocation", "platform", map[string]string{"A100": "2"}, "2")
	from, to, _ := Month("2026-11", b.Location)
	dataFrom := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	dataEnd := time.Date(2026, 11, 24, 14, 37, 0, 0, time.UTC)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "timeslicing", from: dataFrom, to: dataEnd}}
	tenants := []tenant{
		{gpu: 0, ns: "ads", pod: "a", container: "c", team: "ads", share: 0.5, busy: 1.6, start: dataFrom, end: dataEnd},
		{gpu: 0, ns: "nlp", pod: "b", container: "c", team: "nlp", share: 0.5, busy: 0.2, start: dataFrom, end: dataEnd},
	}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Minute), nil)
	r := mustBuild(t, st, b, from, to)
	// 4 days and 14 h 37 min = 6637 minutes; ads holds 0.5 and uses 0.8.
	const minutes = 6637.0
	wantBorrowed := map[string]string{"ads": decimalF(0.3 * minutes / 60), "nlp": "0.000000"}

	var c bytes.Buffer
	if err := WriteCSV(&c, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0][:len(contractCSVColumns)], contractCSVColumns) {
		t.Fatalf("the contract's columns moved: %v", recs[0])
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, name := range []string{"data_start", "data_end", "partial", "borrowed_gpu_hours"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("CSV has no %s column: %v", name, recs[0])
		}
	}
	for _, rec := range recs[1:] {
		if rec[col["data_start"]] != "2026-11-20T00:00:00Z" || rec[col["data_end"]] != "2026-11-24T14:37:00Z" || rec[col["partial"]] != "true" {
			t.Errorf("CSV line %v: data %s to %s, partial %s", rec, rec[col["data_start"]], rec[col["data_end"]], rec[col["partial"]])
		}
		if rec[col["line_type"]] == "charge" && rec[col["borrowed_gpu_hours"]] != wantBorrowed[rec[col["team"]]] {
			t.Errorf("CSV %s borrowed %q, want %q", rec[col["team"]], rec[col["borrowed_gpu_hours"]], wantBorrowed[rec[col["team"]]])
		}
	}

	var f bytes.Buffer
	if err := WriteFOCUS(&f, r); err != nil {
		t.Fatal(err)
	}
	frecs, err := csv.NewReader(&f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	fcol := map[string]int{}
	for i, h := range frecs[0] {
		fcol[h] = i
	}
	checked := 0
	for _, rec := range frecs[1:] {
		if rec[fcol["x_Partial"]] != "true" || rec[fcol["x_DataStart"]] != "2026-11-20T00:00:00Z" || rec[fcol["x_DataEnd"]] != "2026-11-24T14:37:00Z" {
			t.Errorf("FOCUS row: partial %q, data %q to %q", rec[fcol["x_Partial"]], rec[fcol["x_DataStart"]], rec[fcol["x_DataEnd"]])
		}
		team := ""
		for tm := range wantBorrowed {
			if strings.Contains(rec[fcol["AllocatedTags"]]+rec[fcol["Tags"]]+rec[fcol["SubAccountName"]], tm) {
				team = tm
			}
		}
		if rec[fcol["x_LineType"]] == "charge" && team != "" {
			checked++
			if rec[fcol["x_BorrowedGpuHours"]] != wantBorrowed[team] {
				t.Errorf("FOCUS %s borrowed %q, want %q", team, rec[fcol["x_BorrowedGpuHours"]], wantBorrowed[team])
			}
		}
	}
	if checked != 2 {
		t.Errorf("FOCUS: %d charge rows of the two teams", checked)
	}

	var h bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partial: ledger data 2026-11-20 to 2026-11-24 14:37 UTC only", "Borrowed h", "within the held share"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}

	// The covered days, reported after they ended, are whole.
	whole := mustBuild(t, st, b, dataFrom, dataEnd)
	var w bytes.Buffer
	if err := WriteCSV(&w, whole); err != nil {
		t.Fatal(err)
	}
	recs, _ = csv.NewReader(&w).ReadAll()
	if len(recs) < 2 || recs[1][col["partial"]] != "false" {
		t.Errorf("the covered range is marked partial: %v", recs)
	}
}

func decimalF(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
