package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/internal/focusvalidate"
	"github.com/gpuledger/gpuledger/ledger"
)

// closeBook is a price book's bytes and the book.
func closeBook(t testing.TB, a100 string) ([]byte, *pricebook.Book) {
	t.Helper()
	y := []byte("currency: EUR\ntimezone: Europe/Berlin\npolicy: allocation\nidle: shared\ndefaultRate: 1.00\nrates:\n  A100-SXM4-80GB: " + a100 + "\n")
	return y, book(t, string(y))
}

// hours of one whole A100 held by team ml, from start.
func heldHours(start time.Time, n int) []attribution.Row {
	g := []gpu{{node: "n1", uuid: "GPU-1", model: "A100-SXM4-80GB", mode: "exclusive", from: start, to: start.Add(time.Duration(n) * time.Hour)}}
	tn := []tenant{{gpu: 0, ns: "ml", pod: "train", container: "c", team: "ml", share: 1, busy: 0.5, start: start, end: start.Add(time.Duration(n) * time.Hour)}}
	return ledgerRows(g, tn, time.Hour)
}

func berlin(t testing.TB) *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// storedLines reads a stored JSON's amount per line type and team, and
// its adjustments per closed month, by the test's own reading.
type testJSON struct {
	Total json.Number `json:"total"`
	Lines []struct {
		Team     string      `json:"team"`
		LineType string      `json:"line_type"`
		Amount   json.Number `json:"amount"`
	} `json:"lines"`
	Adjustments []struct {
		Period string      `json:"adjusts_period"`
		Team   string      `json:"team"`
		Type   string      `json:"adjusts_line_type"`
		Amount json.Number `json:"amount"`
	} `json:"adjustments"`
	AdjustmentsTotal json.Number `json:"adjustments_total"`
}

func cents(t testing.TB, s json.Number) int64 {
	t.Helper()
	r, ok := new(big.Rat).SetString(string(s))
	if !ok {
		t.Fatalf("amount %q", s)
	}
	r.Mul(r, big.NewRat(100, 1))
	if !r.IsInt() {
		t.Fatalf("amount %q is not whole cents", s)
	}
	return r.Num().Int64()
}

func readJSON(t testing.TB, b []byte) testJSON {
	t.Helper()
	var j testJSON
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestCloseMonthByHand: October is 10 hours of one A100 at 2.40 EUR,
// 24.00. Closed, then the price goes to 3.00 and 5 late hours arrive:
// October's stored files do not move, November bills 5 h x 2.40 = 12.00
// as an adjustment of October; once 3.00 is posted for October, 15 h x
// 3.00 - 24.00 = 21.00; once November (which billed it) is closed,
// December bills nothing more for October.
func TestCloseMonthByHand(t *testing.T) {
	ctx := context.Background()
	loc := berlin(t)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, loc)
	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, loc)
	st := fileLedger(t, append(heldHours(oct, 10), heldHours(nov, 4)...), nil)
	b240, book240 := closeBook(t, "2.40")
	b300, book300 := closeBook(t, "3.00")

	// Not yet ended, in the book's zone: 2026-10-31 23:30 UTC is November in Berlin,
	// 2026-10-31 22:30 UTC (23:30 CET) is not.
	if _, err := CloseMonth(ctx, st, st, book240, b240, "2026-10", time.Date(2026, 10, 31, 22, 30, 0, 0, time.UTC)); err == nil || !strings.Contains(err.Error(), "has not ended") {
		t.Fatalf("closing a month before its end: %v", err)
	}
	if _, err := CloseMonth(ctx, st, st, book240, b240, "2026-09", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)); err == nil || !strings.Contains(err.Error(), "no data") {
		t.Fatalf("closing a month with no data: %v", err)
	}
	c, err := CloseMonth(ctx, st, st, book240, b240, "2026-10", time.Date(2026, 10, 31, 23, 30, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if j := readJSON(t, c.Files["json"]); j.Total != "24.00" {
		t.Fatalf("October closed at %s, want 24.00", j.Total)
	}
	if _, err := CloseMonth(ctx, st, st, book300, b300, "2026-10", time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ledger.ErrAlreadyClosed) {
		t.Fatalf("closing twice: %v, want ErrAlreadyClosed", err)
	}
	stored, err := ClosedMonth(ctx, st, "2026-10")
	if err != nil || stored == nil || !bytes.Equal(stored.Files["csv"], c.Files["csv"]) || stored.PriceBookSHA256 != ledger.PriceBookDigest(b240) {
		t.Fatalf("stored closing %+v, %v", stored, err)
	}

	// Five late hours of October.
	if err := st.Append(ctx, heldHours(oct.Add(10*time.Hour), 5), nil); err != nil {
		t.Fatal(err)
	}
	from, to, _ := Month("2026-11", loc)
	rep, err := BuildOpen(ctx, st, st, book300, "2026-11", from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"ml": 1200}
	if got := adjustmentsByTeam(rep, "2026-10"); !mapsEqual(got, want) {
		t.Fatalf("November's adjustments of October %v, want %v (5 late hours at the closed month's 2.40)", got, want)
	}
	// The CSV has the line, the closed month in its own column.
	recs := csvOf(t, rep, FormatCSV)
	hdr, last := recs[0], recs[len(recs)-1]
	if hdr[len(hdr)-2] != "adjusts_period" || last[6] != "adjustment" || last[12] != "12.00" || last[len(last)-2] != "2026-10" || last[len(last)-1] != "charge" {
		t.Fatalf("CSV adjustment line %v (header %v)", last, hdr)
	}
	// FOCUS: an Adjustment charge on October's invoice, valid FOCUS.
	var fb bytes.Buffer
	if err := Write(ctx, &fb, st, rep, FormatFOCUS); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fb.String(), "Adjustment,") || !strings.Contains(fb.String(), "gpu-platform/2026-10,") {
		t.Fatalf("FOCUS file lacks the adjustment of October:\n%s", fb.String())
	}
	if errs, err := focusvalidate.Validate(bytes.NewReader(fb.Bytes())); err != nil || len(errs) > 0 {
		t.Fatalf("FOCUS file with an adjustment is invalid: %v %v", errs, err)
	}

	// Post 3.00 for October.
	if err := PostAdjustment(ctx, st, "2026-10", b300, "", time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("a post without a reason was recorded")
	}
	if err := PostAdjustment(ctx, st, "2026-10", b300, "contract rate from October", time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := PostAdjustment(ctx, st, "2026-09", b300, "nothing to post", time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ledger.ErrNotClosed) {
		t.Fatalf("posting to an open month: %v", err)
	}
	if _, err := CloseMonth(ctx, st, st, book300, b300, "2026-11", time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	novClosed, _ := ClosedMonth(ctx, st, "2026-11")
	if j := readJSON(t, novClosed.Files["json"]); j.AdjustmentsTotal != "21.00" || j.Total != "12.00" {
		t.Fatalf("November closed with total %s and adjustments %s, want 12.00 (4 h x 3.00) and 21.00 (15 h x 3.00 - 24.00)", j.Total, j.AdjustmentsTotal)
	}
	from, to, _ = Month("2026-12", loc)
	rep, err = BuildOpen(ctx, st, st, book300, "2026-12", from, to, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Adjustments) != 0 {
		t.Fatalf("December re-bills October: %+v", rep.Adjustments)
	}
	// October's stored files are what they were.
	again, _ := ClosedMonth(ctx, st, "2026-10")
	if again.Digest != c.Digest || !bytes.Equal(again.Files["html"], c.Files["html"]) {
		t.Fatal("October's stored files changed")
	}

	// Reopen: recorded, the closing kept; reopening again is refused.
	if err := Reopen(ctx, st, "2026-10", "wrong GPU model on n1", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := Reopen(ctx, st, "2026-10", "again", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ledger.ErrNotClosed) {
		t.Fatalf("reopening an open month: %v", err)
	}
	h, err := st.ClosingHistory(ctx, "2026-10", false)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, x := range h {
		actions = append(actions, x.Action)
	}
	if strings.Join(actions, ",") != "close,post,reopen" {
		t.Fatalf("history %v", actions)
	}
	if m, _ := ClosedMonth(ctx, st, "2026-10"); m != nil {
		t.Fatal("a reopened month reads as closed")
	}
}

func csvOf(t testing.TB, r *Report, f Format) [][]string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(context.Background(), &b, nil, r, f); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func adjustmentsByTeam(r *Report, period string) map[string]int64 {
	out := map[string]int64{}
	for _, a := range r.Adjustments {
		if a.Period == period {
			out[a.Team+"|"+string(a.Type)] += a.Amount
		}
	}
	for k, v := range out {
		if strings.HasSuffix(k, "|charge") {
			delete(out, k)
			out[strings.TrimSuffix(k, "|charge")] += v
		}
	}
	return out
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestClosedPlusAdjustmentsIsRecomputed: with random fleets, random rows
// that reach the ledger after October closed (in two waves, one before
// and one after November closed) and random price changes posted or not,
// October's stored bill plus every adjustment of October billed since
// (November's stored JSON, December's open report) equals October
// recomputed at the prices in force for it, per team and in total, to
// the cent.
func TestClosedPlusAdjustmentsIsRecomputed(t *testing.T) {
	ctx := context.Background()
	loc := berlin(t)
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			start := time.Date(2026, 10, 1, 0, 0, 0, 0, loc)
			end := time.Date(2026, 12, 3, 0, 0, 0, 0, loc)
			models := []string{"A100-SXM4-80GB", "H100-SXM5-80GB", "L4"}
			var gpus []gpu
			for i := range 1 + rng.IntN(2) {
				gpus = append(gpus, gpu{node: fmt.Sprintf("n%d", i), uuid: fmt.Sprintf("GPU-%d", i), model: models[rng.IntN(len(models))],
					mode: "timeslicing", from: start, to: end, unattributed: 0.05})
			}
			teams := []string{"ml", "search", "ads", "infra"}
			var tenants []tenant
			for i := range 2 + rng.IntN(5) {
				s := start.Add(time.Duration(rng.IntN(24*40)) * time.Hour)
				tenants = append(tenants, tenant{gpu: rng.IntN(len(gpus)), ns: teams[i%len(teams)], pod: fmt.Sprintf("p%d", i), container: "c",
					team: teams[rng.IntN(len(teams))], share: 0.25, busy: rng.Float64(), start: s, end: s.Add(time.Duration(1+rng.IntN(24*20)) * time.Hour)})
			}
			all := ledgerRows(gpus, tenants, time.Hour)
			_, octEnd, _ := Month("2026-10", loc)
			// Late rows: whole (GPU, hour) intervals of October, in two waves.
			wave := func(r attribution.Row) int {
				if !r.IntervalStart.Before(octEnd) {
					return 0
				}
				h := (r.IntervalStart.Unix()/3600*31 + int64(len(r.GPUUUID))*7 + int64(r.GPUUUID[len(r.GPUUUID)-1])) % 10
				switch {
				case h < int64(1+seed%3):
					return 1
				case h < 4:
					return 2
				}
				return 0
			}
			var now, late1, late2 []attribution.Row
			for _, r := range all {
				switch wave(r) {
				case 1:
					late1 = append(late1, r)
				case 2:
					late2 = append(late2, r)
				default:
					now = append(now, r)
				}
			}
			st := fileLedger(t, now, nil)
			rate := func() string { return fmt.Sprintf("%d.%02d", 1+rng.IntN(4), rng.IntN(100)) }
			b0, book0 := closeBook(t, rate())
			if _, err := CloseMonth(ctx, st, st, book0, b0, "2026-10", time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
			target := book0
			if err := st.Append(ctx, late1, nil); err != nil {
				t.Fatal(err)
			}
			bNow, bookNow := closeBook(t, rate())
			if rng.IntN(2) == 0 {
				if err := PostAdjustment(ctx, st, "2026-10", bNow, "price change", time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)); err != nil {
					t.Fatal(err)
				}
				target = bookNow
			}
			if _, err := CloseMonth(ctx, st, st, bookNow, bNow, "2026-11", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
			if err := st.Append(ctx, late2, nil); err != nil {
				t.Fatal(err)
			}
			bLast, bookLast := closeBook(t, rate())
			if rng.IntN(2) == 0 {
				if err := PostAdjustment(ctx, st, "2026-10", bLast, "second price change", time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)); err != nil {
					t.Fatal(err)
				}
				target = bookLast
			}
			from, to, _ := Month("2026-12", loc)
			dec, err := BuildOpen(ctx, st, st, bookLast, "2026-12", from, to, to)
			if err != nil {
				t.Fatal(err)
			}

			// What the bills say of October, per team.
			octC, _ := ClosedMonth(ctx, st, "2026-10")
			novC, _ := ClosedMonth(ctx, st, "2026-11")
			billed := map[string]int64{}
			var total int64
			for _, l := range readJSON(t, octC.Files["json"]).Lines {
				billed[l.Team] += cents(t, l.Amount)
				total += cents(t, l.Amount)
			}
			for _, a := range readJSON(t, novC.Files["json"]).Adjustments {
				if a.Period == "2026-10" {
					billed[a.Team] += cents(t, a.Amount)
					total += cents(t, a.Amount)
				}
			}
			for _, a := range dec.Adjustments {
				if a.Period == "2026-10" {
					billed[a.Team] += a.Amount
					total += a.Amount
				}
			}
			// October recomputed at the prices in force for it.
			of, ot, _ := Month("2026-10", loc)
			re := mustBuild(t, st, target, of, ot)
			want := map[string]int64{}
			for _, l := range re.Lines {
				want[l.Team] += l.Amount
			}
			for k, v := range billed {
				if v == 0 {
					delete(billed, k)
				}
			}
			for k, v := range want {
				if v == 0 {
					delete(want, k)
				}
			}
			if total != re.Total || !mapsEqual(billed, want) {
				t.Fatalf("closed + adjustments %d %v, recomputed %d %v", total, billed, re.Total, want)
			}
		})
	}
}

// prunedSource is the ledger with the rows before cut gone, as retention
// prunes them.
type prunedSource struct {
	Source
	cut time.Time
}

func (p prunedSource) Aggregate(ctx context.Context, q ledger.AggregateQuery) ([]ledger.Aggregate, error) {
	if q.From.Before(p.cut) {
		q.From = p.cut
	}
	if !q.From.Before(q.To) {
		return nil, nil
	}
	return p.Source.Aggregate(ctx, q)
}

// A closed month whose rows were pruned since is not refunded: no
// adjustment, and a note says why. October is 10 h at 2.40 (24.00); with
// the first 6 h gone a recomputation would say 9.60, a credit of 14.40.
func TestPrunedRowsAreNoRefund(t *testing.T) {
	ctx := context.Background()
	loc := berlin(t)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, loc)
	st := fileLedger(t, append(heldHours(oct, 10), heldHours(time.Date(2026, 11, 1, 0, 0, 0, 0, loc), 4)...), nil)
	b240, book240 := closeBook(t, "2.40")
	if _, err := CloseMonth(ctx, st, st, book240, b240, "2026-10", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	set, err := Adjustments(ctx, prunedSource{st, oct.Add(6 * time.Hour)}, st, book240, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Lines) != 0 || len(set.Notes) != 1 || !strings.Contains(set.Notes[0], "pruned") || !strings.Contains(set.Notes[0], "2026-10") {
		t.Fatalf("adjustments after pruning: %+v", set)
	}
	// The note is in the JSON and the HTML of the month.
	from, to, _ := Month("2026-11", loc)
	rep := mustBuild(t, st, book240, from, to)
	rep.AdjustmentNotes = set.Notes
	for _, f := range []Format{FormatJSON, FormatHTML} {
		var b bytes.Buffer
		if err := Write(ctx, &b, nil, rep, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "fewer than the") {
			t.Errorf("%s lacks the note", f)
		}
	}
}

// With an energy section the adjustment line fills the energy columns
// with nothing and keeps adjusts_period and adjusts_line_type last.
func TestAdjustmentColumnsAfterEnergy(t *testing.T) {
	b := book(t, "currency: EUR\ntimezone: UTC\npolicy: allocation\nidle: shared\ndefaultRate: 1.00\nrates:\n  A100-SXM4-80GB: 2.40\nenergy:\n  rate: 0.15\n")
	from, to, _ := Month("2026-11", time.UTC)
	st := fileLedger(t, heldHours(from, 2), nil)
	rep := mustBuild(t, st, b, from, to)
	rep.Adjustments = []Adjustment{{Period: "2026-10", Team: "ml", Namespace: "ml", GPUModel: "A100-SXM4-80GB", SharingMode: "exclusive",
		Type: LineCharge, AllocatedHours: big.NewRat(5, 1), UsedHours: big.NewRat(5, 2), Amount: 1200}}
	recs := csvOf(t, rep, FormatCSV)
	hdr := recs[0]
	want := append(append(append([]string{}, CSVHeader...), CSVEnergyColumns...), CSVAdjustmentColumns...)
	if strings.Join(hdr, ",") != strings.Join(want, ",") {
		t.Fatalf("header %v", hdr)
	}
	for _, r := range recs[1:] {
		if len(r) != len(hdr) {
			t.Fatalf("row %v has %d cells, header %d", r, len(r), len(hdr))
		}
	}
	last := recs[len(recs)-1]
	if last[6] != "adjustment" || last[7] != "5.000000" || last[8] != "2.500000" || last[12] != "12.00" || last[18] != "" || last[20] != "2026-10" {
		t.Fatalf("adjustment row %v", last)
	}
	if recs[1][20] != "" || recs[1][21] != "" {
		t.Fatalf("a month's own line names a closed month: %v", recs[1])
	}
}

// Rows pruned and as many late rows arriving: the count matches, but the
// month's data starts later than it was billed from; still no refund.
func TestPrunedAndLateRowsAreNoRefund(t *testing.T) {
	ctx := context.Background()
	loc := berlin(t)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, loc)
	rows := append(heldHours(oct, 10), heldHours(oct.Add(24*time.Hour), 10)...)
	st := fileLedger(t, append(rows, heldHours(time.Date(2026, 11, 1, 0, 0, 0, 0, loc), 4)...), nil)
	b240, book240 := closeBook(t, "2.40")
	if _, err := CloseMonth(ctx, st, st, book240, b240, "2026-10", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	// 1 October pruned (10 hours), 10 late hours of 3 October arrive.
	if err := st.Append(ctx, heldHours(oct.Add(48*time.Hour), 10), nil); err != nil {
		t.Fatal(err)
	}
	set, err := Adjustments(ctx, prunedSource{st, oct.Add(24 * time.Hour)}, st, book240, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Lines) != 0 || len(set.Notes) != 1 || !strings.Contains(set.Notes[0], "pruned") {
		t.Fatalf("adjustments after pruning and late rows: %+v", set)
	}
}
