package adviceprom

import (
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
