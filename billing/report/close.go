package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// BuildOpen builds month's chargeback as an open month bills it: the
// report, with the adjustments of the closed months before it
// (Adjustments). The report command, serve and CloseMonth build through
// it, so a month's preview is what its closing stores.
func BuildOpen(ctx context.Context, src Source, cs ledger.ClosingStore, book *pricebook.Book, month string, from, to, now time.Time) (*Report, error) {
	rep, err := BuildDated(ctx, src, book, from, to, now)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return rep, nil
	}
	set, err := Adjustments(ctx, src, cs, book, month)
	if err != nil {
		return nil, err
	}
	rep.Adjustments, rep.AdjustmentNotes = set.Lines, set.Notes
	return rep, nil
}

// ErrNoDataToClose is CloseMonth's answer for a month the ledger has no
// data in: there is no bill to store.
var ErrNoDataToClose = errors.New("the ledger has no data in it")

// CloseMonth closes month: it builds the month's bill as the report
// command would write it at now, priced with book (whose file's bytes are
// bookBytes), with the adjustments it bills, writes it in every format
// of ledger.ClosedFiles, and records it with the book and a digest in one
// atomic write. A month not yet ended at now in the book's time zone, or
// one the ledger has no data in, is refused with the reason; a closed
// month is ledger.ErrAlreadyClosed and nothing is written.
func CloseMonth(ctx context.Context, src Source, cs ledger.ClosingStore, book *pricebook.Book, bookBytes []byte, month string, now time.Time) (*ledger.Closing, error) {
	from, to, err := Month(month, book.Location)
	if err != nil {
		return nil, fmt.Errorf("cannot close: %w", err)
	}
	if now.Before(to) {
		return nil, fmt.Errorf("cannot close %s: the month has not ended (it ends %s in the price book's time zone %s)", month, to.Format(time.RFC3339), book.Timezone)
	}
	history, err := cs.ClosingHistory(ctx, month, false)
	if err != nil {
		return nil, err
	}
	if ledger.Closed(history) != nil {
		return nil, fmt.Errorf("cannot close %s: %w", month, ledger.ErrAlreadyClosed)
	}
	rep, err := BuildOpen(ctx, src, cs, book, month, from, to, now)
	if err != nil {
		return nil, err
	}
	if rep.Empty() {
		return nil, fmt.Errorf("cannot close %s: %w (%s)", month, ErrNoDataToClose, NoUsageMessage)
	}
	rep.GeneratedAt = now
	c := ledger.Closing{Period: month, Action: ledger.ActionClose, At: now, PriceBook: bookBytes,
		PriceBookSHA256: ledger.PriceBookDigest(bookBytes), Files: map[string][]byte{}}
	for _, name := range ledger.ClosedFiles {
		var b bytes.Buffer
		if err := Write(ctx, &b, src, rep, Format(name)); err != nil {
			return nil, fmt.Errorf("cannot close %s: %w", month, err)
		}
		c.Files[name] = b.Bytes()
	}
	c.Digest = ledger.FilesDigest(c.Files)
	if err := cs.AppendClosing(ctx, c); err != nil {
		return nil, err
	}
	return &c, nil
}

// ClosedMonth is the closing in force for month with its files, nil when
// the month is open.
func ClosedMonth(ctx context.Context, cs ledger.ClosingStore, month string) (*ledger.Closing, error) {
	h, err := cs.ClosingHistory(ctx, month, true)
	if err != nil {
		return nil, err
	}
	return ledger.Closed(h), nil
}

// StoredFile is the file of format f a closing stored.
func StoredFile(c *ledger.Closing, f Format) ([]byte, error) {
	b, ok := c.Files[string(f)]
	if !ok {
		return nil, fmt.Errorf("the closing of %s stored no %s file", c.Period, f)
	}
	return b, nil
}

// TeamDifference is one team's stored and recomputed totals of a closed
// month, in minor units.
type TeamDifference struct {
	Team                 string
	Stored, Recomputed   int64
	StoredFound, Present bool
}

// Difference is recomputed minus stored.
func (d TeamDifference) Difference() int64 { return d.Recomputed - d.Stored }

// Recompute compares a closed month's stored bill with the month
// recomputed now, priced with book: per team (the platform and rounding
// lines under "" with their type as the team), in the book's currency.
func Recompute(ctx context.Context, src Source, c *ledger.Closing, book *pricebook.Book) (*Report, []TeamDifference, error) {
	from, to, err := Month(c.Period, book.Location)
	if err != nil {
		return nil, nil, err
	}
	rep, err := Build(ctx, src, book, from, to)
	if err != nil {
		return nil, nil, err
	}
	j, err := parseStored(c)
	if err != nil {
		return nil, nil, err
	}
	if j.Currency != book.Currency.Code || j.MinorUnit != book.Currency.MinorUnit {
		return nil, nil, fmt.Errorf("cannot compare %s: it was billed in %s, this price book bills in %s", c.Period, j.Currency, book.Currency.Code)
	}
	byTeam := map[string]*TeamDifference{}
	var order []string
	get := func(l storedLine) *TeamDifference {
		team := l.Team
		if team == "" {
			team = "(" + l.LineType + ")"
		}
		d := byTeam[team]
		if d == nil {
			d = &TeamDifference{Team: team}
			byTeam[team] = d
			order = append(order, team)
		}
		return d
	}
	for _, l := range j.Lines {
		amount, err := minorUnits(l.Amount, j.MinorUnit)
		if err != nil {
			return nil, nil, err
		}
		d := get(l)
		d.Stored += amount
		d.StoredFound = true
	}
	for _, l := range rep.Lines {
		d := get(storedLine{Team: l.Team, LineType: string(l.Type)})
		d.Recomputed += l.Amount
		d.Present = true
	}
	out := make([]TeamDifference, 0, len(order))
	for _, t := range order {
		out = append(out, *byTeam[t])
	}
	return rep, out, nil
}

// PostAdjustment records book (its bytes bookBytes) as the prices closed
// month's recomputation is billed at from now on: the first open month
// after it bills the difference as adjustment lines. reason says why, for
// the history. An open month is ledger.ErrNotClosed.
func PostAdjustment(ctx context.Context, cs ledger.ClosingStore, month string, bookBytes []byte, reason string, now time.Time) error {
	if reason == "" {
		return errors.New("cannot post an adjustment without a reason")
	}
	return cs.AppendClosing(ctx, ledger.Closing{Period: month, Action: ledger.ActionPost, At: now, Reason: reason,
		PriceBook: bookBytes, PriceBookSHA256: ledger.PriceBookDigest(bookBytes)})
}

// Reopen records that month is open again: it is recomputed from then on,
// and its earlier closing stays in the history.
func Reopen(ctx context.Context, cs ledger.ClosingStore, month, reason string, now time.Time) error {
	if reason == "" {
		return fmt.Errorf("cannot reopen %s without a reason (--reason)", month)
	}
	return cs.AppendClosing(ctx, ledger.Closing{Period: month, Action: ledger.ActionReopen, At: now, Reason: reason})
}

// StoredTotalsOf is what a closed month's stored JSON says it cost.
type StoredTotalsOf struct {
	Total, Other int64 // Other: the platform and rounding lines
	ByTeam       map[string]int64
}

// StoredTotals reads a closing's total and per-team totals from its
// stored JSON.
func StoredTotals(c *ledger.Closing) (*StoredTotalsOf, error) {
	var j struct {
		MinorUnit int         `json:"minor_unit"`
		Total     json.Number `json:"total"`
		Platform  json.Number `json:"platform"`
		Rounding  json.Number `json:"rounding"`
		Teams     []struct {
			Team  string      `json:"team"`
			Total json.Number `json:"total"`
		} `json:"teams"`
	}
	if err := json.Unmarshal(c.Files["json"], &j); err != nil {
		return nil, fmt.Errorf("cannot read the bill stored when %s was closed: %w", c.Period, err)
	}
	out := &StoredTotalsOf{ByTeam: map[string]int64{}}
	var err error
	if out.Total, err = minorUnits(j.Total, j.MinorUnit); err != nil {
		return nil, err
	}
	var p, r int64
	if p, err = minorUnits(j.Platform, j.MinorUnit); err != nil {
		return nil, err
	}
	if r, err = minorUnits(j.Rounding, j.MinorUnit); err != nil {
		return nil, err
	}
	out.Other = p + r
	for _, t := range j.Teams {
		v, err := minorUnits(t.Total, j.MinorUnit)
		if err != nil {
			return nil, err
		}
		out.ByTeam[t.Team] = v
	}
	return out, nil
}
