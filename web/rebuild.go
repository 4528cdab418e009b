package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

const (
	// DefaultBuildWait is how long a month's page waits for its report
	// by default (Config.BuildWait) before answering that it is being
	// built: a month whose rollups are stale, or a fleet whose month
	// takes minutes to read, answers at once and is built once, in the
	// background, for the next request.
	DefaultBuildWait = 10 * time.Second
	// monthBuildTimeout bounds a month's computation, which goes on
	// after the page that started it has answered: a stale month's
	// rollups rebuilt (155 s for 10,000 GPUs) and its report built.
	monthBuildTimeout = 10 * time.Minute
	// maxInlineStaleHours is how many stale rollup hours a month's
	// report reads raw (FINAL) as it is; with more, they are rebuilt
	// first. The running month has one or two (the hour being written,
	// the one just closed that the shipper is rebuilding); each costs
	// about 0.3 s of raw reading at 10,000 GPUs.
	maxInlineStaleHours = 6
	// retryAfter is what a month being built tells its reader.
	retryAfter = 30
)

// rollupUpkeep is a ledger whose rollups are built apart from its writes
// (ClickHouse) and that can count the stale hours of a range cheaply.
type rollupUpkeep interface {
	ledger.RollupBuilder
	StaleHours(ctx context.Context, from, to time.Time) (int, error)
}

// building is a month's computation in progress: since when, and how many
// stale rollup hours it is rebuilding (0 when none).
type building struct {
	since time.Time
	stale atomic.Int64
}

// startBuilding records that key's computation runs; doneBuilding that it
// ended.
func (s *Server) startBuilding(key cacheKey) *building {
	b := &building{since: time.Now()}
	s.builds.Store(key, b)
	return b
}

func (s *Server) doneBuilding(key cacheKey) { s.builds.Delete(key) }

// upkeep rebuilds the stale rollups of [from, to) before the month's
// report is built, where there are more than maxInlineStaleHours: a
// restored or backfilled month would otherwise be summed from raw rows
// on every build (215 s for 10,000 GPUs) instead of once. A ledger that
// refuses (a read-only user) is logged; the report then reads raw rows.
func (s *Server) upkeep(ctx context.Context, st ledger.Store, b *building, month string, from, to time.Time) {
	up, ok := st.(rollupUpkeep)
	if !ok || !from.Before(to) {
		return
	}
	n, err := up.StaleHours(ctx, from, to)
	if err != nil {
		s.log.Warn("cannot count the month's stale rollup hours", "month", month, "err", RedactURLs(err.Error()))
		return
	}
	if n <= maxInlineStaleHours {
		return
	}
	b.stale.Store(int64(n))
	began := time.Now()
	s.log.Info("rebuilding the month's stale rollups before its report", "month", month, "stale_hours", n)
	if err := up.RebuildRollups(ctx, from, to); err != nil {
		s.log.Warn("cannot rebuild the month's stale rollups: its report reads their raw rows", "month", month, "err", RedactURLs(err.Error()))
		return
	}
	s.log.Info("rebuilt the month's stale rollups", "month", month, "stale_hours", n, "took", time.Since(began).Round(time.Millisecond))
}

// errBuilding answers a month whose computation outlasted the page's wait
// (Config.BuildWait): it goes on in the background.
type errBuilding struct {
	month string
	since time.Time
	stale int64
}

func (s *Server) stillBuilding(key cacheKey) *errBuilding {
	e := &errBuilding{month: key.month, since: time.Now()}
	if v, ok := s.builds.Load(key); ok {
		b := v.(*building)
		e.since, e.stale = b.since, b.stale.Load()
	}
	return e
}

func (e *errBuilding) Error() string { return e.note() }

// note is the sentence the page, the JSON and the header carry.
func (e *errBuilding) note() string {
	why := "its report takes longer than the page waits"
	if e.stale > 0 {
		why = fmt.Sprintf("the ledger's rollups of %d hours were written after their last build and are being rebuilt", e.stale)
	}
	return fmt.Sprintf("%s is being rebuilt: %s (started %s). This answer comes back with the bill once it is built; try again in %d seconds.",
		e.month, why, e.since.UTC().Format(time.RFC3339), retryAfter)
}

// writeBuilding answers a month being built: the page (202) and the JSON
// (202, "rebuilding": true) say so; the CSV and FOCUS files, which a
// script saves as they come, are 503 with Retry-After, never a note in
// place of a bill.
func writeBuilding(w http.ResponseWriter, e *errBuilding, suffix string) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(retryAfter))
	h.Set("X-Gpuledger-Rebuilding", e.note())
	switch suffix {
	case fileJSON:
		body, _ := json.MarshalIndent(struct {
			Month      string `json:"month"`
			Rebuilding bool   `json:"rebuilding"`
			StaleHours int64  `json:"stale_hours"`
			Since      string `json:"since"`
			Note       string `json:"note"`
		}{e.month, true, e.stale, e.since.UTC().Format(time.RFC3339), e.note()}, "", "  ")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(append(body, '\n'))
	case fileHTML:
		var b bytes.Buffer
		if err := errorTemplate.Execute(&b, struct {
			Style       template.CSS
			CSP, Status string
			Code        int
			Message     string
		}{report.Stylesheet(), report.ContentSecurityPolicy(), "Being rebuilt", http.StatusAccepted, e.note()}); err != nil {
			http.Error(w, e.note(), http.StatusAccepted)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(b.Bytes())
	default:
		http.Error(w, e.note(), http.StatusServiceUnavailable)
	}
}
