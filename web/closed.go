package web

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// A closed month (gpuledger close, or serve --close-after-days) is served
// from the files its closing stored, byte for byte, whatever the price
// book says now; its bill on the index is the stored one, marked closed.

// closedMonths are the months closed now (their closings, without files).
func (s *Server) closedMonths(ctx context.Context) (map[string]*ledger.Closing, error) {
	out := map[string]*ledger.Closing{}
	err := s.withStore(ctx, func(st ledger.Store) error {
		cs, err := ledger.Closings(st)
		if err != nil {
			return err
		}
		h, err := cs.ClosingHistory(ctx, "", false)
		if err != nil {
			return err
		}
		byMonth := map[string][]ledger.Closing{}
		for _, c := range h {
			byMonth[c.Period] = append(byMonth[c.Period], c)
		}
		for m, mh := range byMonth {
			if c := ledger.Closed(mh); c != nil {
				out[m] = c
			}
		}
		return nil
	})
	return out, err
}

// closedMonth is month's closing in force with its files, nil when the
// month is open.
func (s *Server) closedMonth(ctx context.Context, month string) (*ledger.Closing, error) {
	var c *ledger.Closing
	err := s.withStore(ctx, func(st ledger.Store) error {
		cs, err := ledger.Closings(st)
		if err != nil {
			return err
		}
		c, err = report.ClosedMonth(ctx, cs, month)
		return err
	})
	return c, err
}

// serveClosed sends a closed month's stored file.
func (s *Server) serveClosed(ctx context.Context, w http.ResponseWriter, r *http.Request, c *ledger.Closing, suffix string) error {
	b, err := report.StoredFile(c, fileFormats[suffix])
	if err != nil {
		return err
	}
	if suffix == fileHTML {
		if b, err = s.withMonthNav(ctx, r, b, "report", c.Period); err != nil {
			return err
		}
	}
	h := w.Header()
	h.Set("X-Gpuledger-Closed", ledger.FormatTime(c.At)+"; digest="+c.Digest)
	h.Set("Content-Type", fileFormats[suffix].ContentType())
	base := "gpuledger-chargeback-" + c.Period
	switch suffix {
	case fileHTML:
	case fileJSON:
		h.Set("Content-Disposition", `inline; filename="`+base+suffix+`"`)
	default:
		h.Set("Content-Disposition", `attachment; filename="`+base+suffix+`"`)
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
	return nil
}

// storedTotals caches what closed months' stored JSON says they cost,
// by the closing's digest (which names its files' content, so the cache
// is right for every server and ledger): the index reads each closed
// month's files once, not on every request. Bounded by maxStoredTotals;
// when full it starts again.
var storedTotals = struct {
	sync.Mutex
	m map[string]*report.StoredTotalsOf
}{m: map[string]*report.StoredTotalsOf{}}

const maxStoredTotals = 4 * MaxMonths

// closedTotals are the stored totals of month's closing c (read without
// files): cached by digest, else read with the files.
func (s *Server) closedTotals(ctx context.Context, month string, c *ledger.Closing) (*report.StoredTotalsOf, error) {
	storedTotals.Lock()
	t := storedTotals.m[c.Digest]
	storedTotals.Unlock()
	if t != nil {
		return t, nil
	}
	full, err := s.closedMonth(ctx, month)
	if err != nil || full == nil {
		return nil, err
	}
	if t, err = report.StoredTotals(full); err != nil {
		return nil, err
	}
	storedTotals.Lock()
	if len(storedTotals.m) >= maxStoredTotals {
		storedTotals.m = map[string]*report.StoredTotalsOf{}
	}
	storedTotals.m[full.Digest] = t
	storedTotals.Unlock()
	return t, nil
}

// withStoredTotals makes b's totals the ones closing c stored.
func withStoredTotals(b *monthBill, c *ledger.Closing, t *report.StoredTotalsOf) {
	cp := *b.rep
	cp.Total = t.Total
	b.rep, b.byTeam, b.other, b.partial = &cp, t.ByTeam, t.Other, ""
	b.closed = ledger.FormatTime(c.At)
}
