package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpuledger/gpuledger/collector/exposition"
)

// serveWithWebConfig serves srv on listen until ctx ends. TLS and basic
// auth come from a Prometheus exporter-toolkit web config file (the
// --web.config.file of node_exporter and Prometheus: tls_server_config,
// basic_auth_users with bcrypt hashes, http_server_config); an empty
// webConfigFile serves plain HTTP. The file is validated before listening,
// and re-read by the toolkit on each TLS handshake and request, so
// rotated certificates and changed users apply without a restart.
//
// It returns nil once ctx has ended and the server has shut down, and the
// listening or serving error otherwise.
func serveWithWebConfig(ctx context.Context, srv *http.Server, listen, webConfigFile string) error {
	if err := web.Validate(webConfigFile); err != nil {
		return fmt.Errorf("cannot use web config file %s: %w", webConfigFile, err)
	}
	systemdSocket := false
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{listen},
		WebSystemdSocket:   &systemdSocket,
		WebConfigFile:      &webConfigFile,
	}
	log := slog.Default().With("component", "web")
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, flags, log) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("cannot serve on %s: %w", listen, err)
	case <-ctx.Done():
		// Let scrapes in flight finish, but not for long: the collector
		// is shutting down.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(shutdown)
		if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
			err = serveErr
		}
		if err != nil {
			return fmt.Errorf("cannot shut down the server on %s: %w", listen, err)
		}
		return nil
	}
}

// serveMux is the collector's HTTP surface: exp's /metrics and /healthz.
func serveMux(exp *exposition.Exporter) *http.ServeMux { return metricsMux(exp.Handler()) }

// metricsMux serves metrics on /metrics and a liveness answer on /healthz,
// the wiring collect, simulate --listen and the demo share.
func metricsMux(metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}
