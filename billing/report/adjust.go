package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sync"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// LineAdjustment is the line_type of an adjustment line: a correction of
// a closed month billed in an open one (docs/report.md).
const LineAdjustment LineType = "adjustment"

// MaxAdjustMonths bounds how far back an open month looks for closed
// months to adjust: each one costs a rebuild of that month.
const MaxAdjustMonths = 12

// Adjustment is one adjustment line: what changed in one line of a closed
// month since it was closed, billed in an open month. The key is the
// closed month's line (team, namespace, GPU model, sharing mode, line
// type); the numbers are differences, recomputed minus stored minus the
// adjustments already billed for it.
type Adjustment struct {
	Period                                 string // the closed month, YYYY-MM
	Team, Namespace, GPUModel, SharingMode string
	Type                                   LineType // the closed month's line type
	// AllocatedHours and UsedHours are the differences of the lines'
	// GPU-hours as the files print them (1e-6); zero on a rounding line.
	AllocatedHours, UsedHours *big.Rat
	Amount                    int64 // minor units
}

// AdjustmentsTotal is the sum of r's adjustment amounts.
func (r *Report) AdjustmentsTotal() int64 {
	var t int64
	for _, a := range r.Adjustments {
		t += a.Amount
	}
	return t
}

// adjKey names a line of a month across its bills.
type adjKey struct {
	team, namespace, model, mode string
	typ                          LineType
}

// lineSums are a key's amount and hours.
type lineSums struct {
	amount          int64
	allocated, used *big.Rat
}

func (s *lineSums) add(amount int64, allocated, used *big.Rat, sign int) {
	if s.allocated == nil {
		s.allocated, s.used = new(big.Rat), new(big.Rat)
	}
	if sign < 0 {
		s.amount -= amount
		s.allocated.Sub(s.allocated, allocated)
		s.used.Sub(s.used, used)
		return
	}
	s.amount += amount
	s.allocated.Add(s.allocated, allocated)
	s.used.Add(s.used, used)
}

// storedJSON is what adjustments read of a closed month's stored JSON.
type storedJSON struct {
	Currency    string `json:"currency"`
	MinorUnit   int    `json:"minor_unit"`
	Lines       []storedLine
	Adjustments []storedLine `json:"adjustments"`
	Models      []struct {
		Rows int64 `json:"ledger_rows"`
	} `json:"gpu_models"`
	Period struct {
		DataStart string `json:"data_start"`
	} `json:"period"`
}

type storedLine struct {
	Period         string       `json:"adjusts_period"`
	Team           string       `json:"team"`
	Namespace      string       `json:"namespace"`
	GPUModel       string       `json:"gpu_model"`
	SharingMode    string       `json:"sharing_mode"`
	LineType       string       `json:"line_type"`
	AdjustsType    string       `json:"adjusts_line_type"`
	AllocatedHours *json.Number `json:"allocated_gpu_hours"`
	UsedHours      *json.Number `json:"used_gpu_hours"`
	Amount         json.Number  `json:"amount"`
}

func (l storedLine) key() adjKey {
	t := LineType(l.LineType)
	if l.AdjustsType != "" {
		t = LineType(l.AdjustsType)
	}
	return adjKey{l.Team, l.Namespace, l.GPUModel, l.SharingMode, t}
}

// storedClosing is a closing (without its files) and its stored JSON.
type storedClosing struct {
	c *ledger.Closing
	j *storedJSON
}

// storedJSONs caches closings' parsed JSON by digest, which names the
// files' content, so the cache is right for every ledger: an open month
// rebuilt every few seconds (serve's running month) reads the closed
// months' files once, not on every build. Bounded by maxStoredJSONs;
// when full it starts again.
var storedJSONs = struct {
	sync.Mutex
	m map[string]*storedJSON
}{m: map[string]*storedJSON{}}

const maxStoredJSONs = 256

// storedJSONOf is closing c's stored JSON: from the cache, else read
// with the month's files (their digest verified) and parsed.
func storedJSONOf(ctx context.Context, cs ledger.ClosingStore, c *ledger.Closing) (*storedJSON, error) {
	storedJSONs.Lock()
	j := storedJSONs.m[c.Digest]
	storedJSONs.Unlock()
	if j != nil {
		return j, nil
	}
	h, err := cs.ClosingHistory(ctx, c.Period, true)
	if err != nil {
		return nil, err
	}
	full := ledger.Closed(h)
	if full == nil || full.Digest != c.Digest {
		return nil, fmt.Errorf("cannot read the bill stored for %s: its closing changed while being read; try again", c.Period)
	}
	if j, err = parseStored(full); err != nil {
		return nil, err
	}
	storedJSONs.Lock()
	if len(storedJSONs.m) >= maxStoredJSONs {
		storedJSONs.m = map[string]*storedJSON{}
	}
	storedJSONs.m[c.Digest] = j
	storedJSONs.Unlock()
	return j, nil
}

// parseStored reads a closing's JSON.
func parseStored(c *ledger.Closing) (*storedJSON, error) {
	var j storedJSON
	if err := json.Unmarshal(c.Files["json"], &j); err != nil {
		return nil, fmt.Errorf("cannot read the bill stored when %s was closed (seq %d): %w", c.Period, c.Seq, err)
	}
	return &j, nil
}

// minorUnits reads a decimal amount of the files as minor units.
func minorUnits(n json.Number, unit int) (int64, error) {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return 0, fmt.Errorf("amount %q is not a decimal", n)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(unit)), nil)))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, fmt.Errorf("amount %q is not a whole number of minor units", n)
	}
	return r.Num().Int64(), nil
}

func hoursOf(n *json.Number) (*big.Rat, error) {
	if n == nil || *n == "" {
		return new(big.Rat), nil
	}
	r, ok := new(big.Rat).SetString(string(*n))
	if !ok {
		return nil, fmt.Errorf("GPU-hours %q is not a decimal", *n)
	}
	return r, nil
}

// sumLines adds lines into sums, under sign.
func sumLines(sums map[adjKey]*lineSums, lines []storedLine, unit, sign int) error {
	for _, l := range lines {
		amount, err := minorUnits(l.Amount, unit)
		if err != nil {
			return err
		}
		alloc, err := hoursOf(l.AllocatedHours)
		if err != nil {
			return err
		}
		used, err := hoursOf(l.UsedHours)
		if err != nil {
			return err
		}
		s := sums[l.key()]
		if s == nil {
			s = &lineSums{}
			sums[l.key()] = s
		}
		s.add(amount, alloc, used, sign)
	}
	return nil
}

// AdjustmentSet is what an open month bills for the closed months before
// it: the lines, and notes on the closed months it could not adjust.
type AdjustmentSet struct {
	Lines []Adjustment
	Notes []string
}

// Adjustments computes the adjustment lines open month `month` bills
// (docs/report.md): for each closed month M before it with no open month
// between them (at most MaxAdjustMonths back), per line of M,
//
//	recompute(M) − stored(M) − adjustments for M billed in months closed since M was,
//
// where recompute(M) is M rebuilt from the ledger now, priced with the
// price book of M's last post when there is one, else with the book M
// was closed with: rows that arrived late are billed at the closed
// month's prices, and a price change reaches a closed month only when an
// operator posts it (gpuledger adjust --post). A closed month whose
// ledger now holds fewer rows than it was billed from (rows pruned by
// retention) is left alone with a note: a lost row is not a refund.
func Adjustments(ctx context.Context, src Source, cs ledger.ClosingStore, book *pricebook.Book, month string) (*AdjustmentSet, error) {
	if !ledger.ValidPeriod(month) {
		return nil, fmt.Errorf("cannot compute adjustments for %q: not a month YYYY-MM", month)
	}
	history, err := cs.ClosingHistory(ctx, "", false)
	if err != nil {
		return nil, err
	}
	byMonth := map[string][]ledger.Closing{}
	for _, c := range history {
		byMonth[c.Period] = append(byMonth[c.Period], c)
	}
	set := &AdjustmentSet{}
	if ledger.Closed(byMonth[month]) != nil {
		return set, nil // a closed month's bill is its stored files
	}
	// The closed months just before month, newest first.
	var closed []string
	t, err := time.Parse("2006-01", month)
	if err != nil {
		return nil, fmt.Errorf("cannot compute adjustments for %q: %w", month, err)
	}
	for range MaxAdjustMonths {
		t = t.AddDate(0, -1, 0)
		m := t.Format("2006-01")
		if ledger.Closed(byMonth[m]) == nil {
			break
		}
		closed = append(closed, m)
	}
	stored := map[string]*storedClosing{}
	for _, m := range closed {
		c := ledger.Closed(byMonth[m])
		j, err := storedJSONOf(ctx, cs, c)
		if err != nil {
			return nil, err
		}
		stored[m] = &storedClosing{c, j}
	}
	for _, m := range closed {
		lines, note, err := adjustMonth(ctx, src, book, m, stored, ledger.LastPost(byMonth[m]))
		if err != nil {
			return nil, err
		}
		if note != "" {
			set.Notes = append(set.Notes, note)
		}
		set.Lines = append(set.Lines, lines...)
	}
	slices.SortStableFunc(set.Lines, func(a, b Adjustment) int {
		return cmp.Or(cmp.Compare(a.Period, b.Period), cmp.Compare(a.Team, b.Team), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.GPUModel, b.GPUModel), cmp.Compare(a.SharingMode, b.SharingMode), cmp.Compare(a.Type, b.Type))
	})
	return set, nil
}

// adjustMonth computes closed month m's adjustment lines.
func adjustMonth(ctx context.Context, src Source, book *pricebook.Book, m string, stored map[string]*storedClosing, post *ledger.Closing) ([]Adjustment, string, error) {
	c, j := stored[m].c, stored[m].j
	target := c.PriceBook
	if post != nil {
		target = post.PriceBook
	}
	tb, err := pricebook.Parse("price book stored with "+m, target)
	if err != nil {
		return nil, "", fmt.Errorf("cannot recompute closed month %s: %w", m, err)
	}
	if tb.Currency.Code != book.Currency.Code || tb.Currency.MinorUnit != book.Currency.MinorUnit {
		return nil, fmt.Sprintf("%s is billed in %s, this price book in %s: its adjustments are not billed here", m, tb.Currency.Code, book.Currency.Code), nil
	}
	from, to, err := Month(m, tb.Location)
	if err != nil {
		return nil, "", err
	}
	var storedRows int64
	for _, md := range j.Models {
		storedRows += md.Rows
	}
	// Day aggregates (the rollups: cheap): how many rows the month has
	// now and the first day with any, against what it was billed from.
	aggs, err := src.Aggregate(ctx, ledger.AggregateQuery{From: from, To: to, Location: tb.Location, Bucket: ledger.BucketDay})
	if err != nil {
		return nil, "", fmt.Errorf("cannot recompute closed month %s: %w", m, err)
	}
	var (
		rows     int64
		firstDay time.Time
	)
	for _, a := range aggs {
		rows += a.Rows
		if a.Rows > 0 && (firstDay.IsZero() || a.BucketStart.Before(firstDay)) {
			firstDay = a.BucketStart
		}
	}
	if was, err := time.Parse(time.RFC3339, j.Period.DataStart); err == nil && !firstDay.IsZero() {
		w := was.In(tb.Location)
		if wasDay := time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, tb.Location); firstDay.After(wasDay) {
			// Retention prunes the oldest rows first: late rows may make
			// up the count, but the month's data no longer starts where
			// it did.
			return nil, fmt.Sprintf("the ledger's rows of %s now start on %s, after the %s it was billed from (pruned): no adjustment",
				m, firstDay.Format("2006-01-02"), j.Period.DataStart), nil
		}
	}
	switch {
	case rows < storedRows:
		return nil, fmt.Sprintf("the ledger holds %d rows of %s, fewer than the %d it was billed from (pruned): no adjustment", rows, m, storedRows), nil
	case rows == storedRows && post == nil:
		return nil, "", nil // nothing arrived late and no price was posted: nothing to adjust
	}
	// Late rows are priced as the month was when it closed: by the books
	// in force then (BuildDated as of the closing), so a month that
	// spanned a price change is not adjusted for it. A posted price
	// reprices the whole month with the posted book.
	var rep *Report
	if post == nil {
		rep, err = BuildDated(ctx, src, tb, from, to, c.At)
	} else {
		rep, err = Build(ctx, src, tb, from, to)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot recompute closed month %s: %w", m, err)
	}
	if was, err := time.Parse(time.RFC3339, j.Period.DataStart); err == nil {
		if start, _ := rep.DataBounds(); start.After(was) {
			// Retention prunes the oldest rows first: late rows may make
			// up the count, but the month's data no longer starts where
			// it did.
			return nil, fmt.Sprintf("the ledger's rows of %s now start %s, after the %s it was billed from (pruned): no adjustment",
				m, start.Format(time.RFC3339), j.Period.DataStart), nil
		}
	}
	unit := tb.Currency.MinorUnit
	sums := map[adjKey]*lineSums{}
	for _, l := range rep.Lines {
		f := lineFields(rep, l)
		alloc, used := json.Number(f.Allocated), json.Number(f.Used)
		if err := sumLines(sums, []storedLine{{Team: l.Team, Namespace: l.Namespace, GPUModel: l.GPUModel, SharingMode: l.SharingMode,
			LineType: string(l.Type), AllocatedHours: &alloc, UsedHours: &used, Amount: json.Number(f.Amount)}}, unit, 1); err != nil {
			return nil, "", err
		}
	}
	if err := sumLines(sums, j.Lines, j.MinorUnit, -1); err != nil {
		return nil, "", fmt.Errorf("cannot read the bill stored for %s: %w", m, err)
	}
	for k, other := range stored {
		if k == m || !other.c.At.After(c.At) {
			continue
		}
		oj := other.j
		var billed []storedLine
		for _, a := range oj.Adjustments {
			if a.Period == m {
				billed = append(billed, a)
			}
		}
		if err := sumLines(sums, billed, oj.MinorUnit, -1); err != nil {
			return nil, "", fmt.Errorf("cannot read the adjustments stored for %s: %w", k, err)
		}
	}
	var out []Adjustment
	for k, s := range sums {
		if s.amount == 0 && s.allocated.Sign() == 0 && s.used.Sign() == 0 {
			continue
		}
		out = append(out, Adjustment{Period: m, Team: k.team, Namespace: k.namespace, GPUModel: k.model, SharingMode: k.mode,
			Type: k.typ, AllocatedHours: s.allocated, UsedHours: s.used, Amount: s.amount})
	}
	return out, "", nil
}
