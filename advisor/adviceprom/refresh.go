package adviceprom

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/advisor/advise"
)

// WriteRefresh writes the freshness series of `gpuledger advise --listen`:
// when the advice it serves was computed (zero time: never) and how many
// refreshes failed, so that an alert tells stale advice from none.
func WriteRefresh(w io.Writer, at time.Time, failures int64) error {
	reg := prometheus.NewRegistry()
	ts := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_advice_refresh_timestamp_seconds",
		Help: "When the served advice was computed (Unix seconds; 0 until the first refresh succeeds)."})
	failed := prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuledger_advice_refresh_failures_total",
		Help: "Refreshes that could not advise (no data in the window yet, ledger unreachable)."})
	reg.MustRegister(ts, failed)
	if !at.IsZero() {
		ts.Set(float64(at.UnixMilli()) / 1000)
	}
	failed.Add(float64(failures))
	return encode(w, reg, "advice refresh series")
}

// Refresher keeps the newest advice series and their freshness, for the
// two exporters of the advice: `gpuledger advise --listen` (which serves
// it as its /metrics, ServeHTTP) and `gpuledger serve` (which adds it to
// its own /metrics, WriteTo). A failed refresh keeps the previous advice
// and is counted.
type Refresher struct {
	mu       sync.Mutex
	body     []byte    // the newest successful advice's series
	at       time.Time // when it was computed; zero: never
	failures int64
	// fresh is WriteRefresh's text for at and failures, nil until a
	// WriteTo writes it after they change: the series change only with a
	// refresh, and writing them gathers a registry, which a busy serve
	// would otherwise do on every scrape (BENCHMARKS.md: /metrics under
	// load).
	fresh []byte
}

// Refresh computes the advice as of now with plan and keeps its series.
// On failure the previous series stay and the failure is counted, unless
// ctx was canceled: a refresh cut short by shutdown did not fail (one
// that ran out of its own deadline did).
func (r *Refresher) Refresh(ctx context.Context, now time.Time, plan func(context.Context) (*advise.Plan, error)) error {
	p, err := plan(ctx)
	var b bytes.Buffer
	if err == nil {
		err = Write(&b, p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			r.failures++
			r.fresh = nil
		}
		return err
	}
	r.body, r.at, r.fresh = b.Bytes(), now, nil
	return nil
}

// WriteTo writes the newest advice series, then their freshness series
// (WriteRefresh), in the text exposition format.
func (r *Refresher) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	if r.fresh == nil {
		var f bytes.Buffer
		if err := WriteRefresh(&f, r.at, r.failures); err != nil {
			r.mu.Unlock()
			return 0, err
		}
		r.fresh = f.Bytes()
	}
	body, fresh := r.body, r.fresh
	r.mu.Unlock()
	var b bytes.Buffer
	b.Write(body)
	b.Write(fresh)
	return b.WriteTo(w)
}

// ServeHTTP serves WriteTo's series, as `gpuledger advise --listen`'s
// /metrics.
func (r *Refresher) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	_, _ = w.Write(b.Bytes())
}

// Every calls refresh at once, then every interval until ctx ends: the
// refresh loop of both exporters (each logs its own failures).
func Every(ctx context.Context, interval time.Duration, refresh func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		refresh()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
