package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpuledger/gpuledger/collector/exposition"
)

// serveWithWebConfig serves srv on listen until ctx ends. TLS and basic
// auth come from a Prometheus exporter-toolkit web config file (the
// --web.config.file of node_exporter and Prometheus: tls_server_config,
// basic_auth_users with bcrypt hashes, http_server_config); an empty
// webConfigFile serves plain HTTP. The file is validated and the address
// bound before anything is served, so a bad file or a port another process
// holds fails at once; the toolkit re-reads the file on each TLS handshake
// and request, so rotated certificates and changed users apply without a
// restart.
//
// It returns nil once ctx has ended and the server has shut down, and the
// listening or serving error otherwise.
func serveWithWebConfig(ctx context.Context, srv *http.Server, listen, webConfigFile string) error {
	ln, err := bindWithWebConfig(listen, webConfigFile)
	if err != nil {
		return err
	}
	return serveListener(ctx, srv, ln, webConfigFile)
}

// bindWithWebConfig validates the web config file and binds listen.
func bindWithWebConfig(listen, webConfigFile string) (net.Listener, error) {
	if err := web.Validate(webConfigFile); err != nil {
		return nil, fmt.Errorf("cannot use web config file %s: %w", webConfigFile, err)
	}
	return listenTCP(listen)
}

// listenTCP binds addr. Every command that serves binds before it does
// anything else, so an address another process holds is an error at
// start, not a server that never answers.
func listenTCP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (is another process using it? choose another address with --listen): %w", addr, err)
	}
	return ln, nil
}

// serveListener serves srv on the bound ln until ctx ends, with TLS and
// basic auth from webConfigFile (validated by bindWithWebConfig).
func serveListener(ctx context.Context, srv *http.Server, ln net.Listener, webConfigFile string) error {
	listen := ln.Addr().String()
	systemdSocket := false
	flags := &web.FlagConfig{
		WebListenAddresses: &[]string{listen},
		WebSystemdSocket:   &systemdSocket,
		WebConfigFile:      &webConfigFile,
	}
	log := slog.Default().With("component", "web")
	errc := make(chan error, 1)
	go func() { errc <- web.Serve(ln, srv, flags, log) }()
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
func serveMux(exp *exposition.Exporter) *http.ServeMux { return exposition.Mux(exp.Handler()) }

// metricsMux is exposition.Mux (metrics on /metrics, /healthz) under the
// name the demo's and advise --listen's wiring call.
func metricsMux(metrics http.Handler) *http.ServeMux { return exposition.Mux(metrics) }
