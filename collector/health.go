package collector

import (
	"log/slog"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/exposition"
)

// health counts source errors and input anomalies and logs each once: a
// source error once per failure streak, an anomaly once per key, so a bad
// device ID or a dead kubelet does not flood the log at one line per second.
type health struct {
	log         *slog.Logger
	up          map[string]bool
	errors      map[string]uint64
	anomalies   map[string]uint64
	seenAnomaly map[string]bool
	rowsWritten uint64
	writeErrors uint64
	writeDown   bool // the last write failed: log again only after a success
	stops       bool // the caller stops at a failed write (Config.StopsOnWriteError)
}

func newHealth(log *slog.Logger) health {
	return health{
		log: log, up: map[string]bool{}, errors: map[string]uint64{},
		anomalies: map[string]uint64{}, seenAnomaly: map[string]bool{},
	}
}

// report records a source's outcome for this cycle.
func (h *health) report(source string, err error) {
	was, known := h.up[source]
	if err == nil {
		if known && !was {
			h.log.Info("source recovered", "source", source)
		}
		h.up[source] = true
		return
	}
	h.errors[source]++
	if !known || was {
		h.log.Warn("source failing; its data is degraded until it recovers", "source", source, "err", err)
	}
	h.up[source] = false
}

// count records a partial error of a source that otherwise worked.
func (h *health) count(source string, err error) {
	h.errors[source]++
	key := source + ":" + err.Error()
	if !h.seenAnomaly[key] {
		h.seenAnomaly[key] = true
		h.log.Warn("source problem", "source", source, "err", err)
	}
}

// anomaly counts n anomalies of a's kind and logs a's key once. Kinds are
// attribution's strings, whatever they are: a kind added there is counted
// and exported without a change here.
func (h *health) anomaly(a attribution.Anomaly, n uint64) {
	h.anomalies[a.Kind] += n
	key := a.Kind + ":" + a.Key
	if h.seenAnomaly[key] {
		return
	}
	h.seenAnomaly[key] = true
	h.log.Warn("attribution input problem; its capacity stays unallocated or unattributed", "kind", a.Kind, "key", a.Key, "detail", a.Detail)
}

// writeFailed counts a failed ledger write and shouts once per outage.
func (h *health) writeFailed(err error) {
	h.writeErrors++
	switch {
	case h.stops:
		h.log.Error("cannot write the ledger: stopping", "err", err)
	case !h.writeDown:
		h.log.Error("cannot write the ledger; rows are held in memory and retried every cycle, metrics keep being served", "err", err)
	}
	h.writeDown = true
}

func (h *health) meta(obs attribution.Observation, took time.Duration) exposition.CycleMeta {
	return exposition.CycleMeta{
		GPUs:              obs.GPUs,
		Pods:              obs.Metadata.Pods,
		CycleDuration:     took,
		SourceUp:          h.up,
		SourceErrors:      h.errors,
		Anomalies:         h.anomalies,
		LedgerRowsWritten: h.rowsWritten,
		LedgerWriteErrors: h.writeErrors,
	}
}
