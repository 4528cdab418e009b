package exposition

import (
	"io"
	"net/http"
	"sync/atomic"
)

// Mux serves metrics on /metrics and a liveness answer on /healthz: the
// HTTP surface collect, simulate --listen, the demo and advise --listen
// share.
func Mux(metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// Startup is the collector's HTTP surface while it starts: the listener is
// bound first, and until Ready is called /healthz answers alive with the
// phase ("migrating" while the node's ledger migrates, 36 s measured on a
// 100-GPU month), /readyz and /metrics answer 503 with it, so a liveness
// probe does not kill a collector that is busy migrating.
type Startup struct {
	phase   atomic.Pointer[string]
	metrics atomic.Pointer[http.Handler]
}

// NewStartup is a surface not ready yet, in phase.
func NewStartup(phase string) *Startup {
	s := &Startup{}
	s.SetPhase(phase)
	return s
}

// SetPhase says what the collector is doing while not ready.
func (s *Startup) SetPhase(phase string) { s.phase.Store(&phase) }

// Ready switches /metrics to metrics and the probes to "ok".
func (s *Startup) Ready(metrics http.Handler) {
	s.metrics.Store(&metrics)
	s.SetPhase("ok")
}

// Mux serves /healthz, /readyz and /metrics.
func (s *Startup) Mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, *s.phase.Load()+"\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.metrics.Load() == nil {
			http.Error(w, "not ready: "+*s.phase.Load(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		h := s.metrics.Load()
		if h == nil {
			http.Error(w, "not ready: "+*s.phase.Load(), http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	})
	return mux
}
