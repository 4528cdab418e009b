package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpuledger/gpuledger/advisor/adviceprom"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/ledger"
)

// promDurationFlag parses a Prometheus duration ("30d", "9600h", "0")
// into dst, for flag.Func.
func promDurationFlag(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := model.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("want a duration like 30d or 12h: %w", err)
		}
		*dst = time.Duration(d)
		return nil
	}
}

// checkServe names what --listen cannot be combined with or lacks.
func (f *adviseFlags) checkServe() error {
	switch {
	case f.period != "" || f.from != "" || f.to != "":
		return errors.New("advise --listen advises on the trailing --window: drop --period/--from/--to")
	case f.out != "" || (f.format != "text" && f.format != "prom"):
		return errors.New("advise --listen serves the prom format over HTTP: drop --out and --format")
	case f.window < time.Hour || f.window > advise.MaxPeriod:
		return fmt.Errorf("advise: --window %s: want 1h to 366d", model.Duration(f.window))
	case f.refresh < time.Minute:
		return fmt.Errorf("advise: --refresh %s: want at least 1m", f.refresh)
	case f.prices == "":
		return errors.New("advise needs --prices FILE (or GPULEDGER_PRICES)")
	case f.ledger == "":
		return errors.New("advise needs --ledger DSN or GPULEDGER_LEDGER")
	}
	return nil
}

// serveAdvice is advise --listen: advise every --refresh on the trailing
// --window that ended at the last whole hour, and serve the newest advice
// (adviceprom.Refresher) until ctx ends; a failed refresh keeps the
// previous advice.
func serveAdvice(ctx context.Context, f adviseFlags) error {
	book, err := pricebook.Load(f.prices)
	if err != nil {
		return err
	}
	pods, st, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// The refresher stops and is waited for before the store closes
	// (defers run last first), also when serving fails at once.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	x := &adviceprom.Refresher{}
	log := slog.Default().With("component", "advise")
	clock := f.now
	if clock == nil {
		clock = time.Now
	}
	refreshNow := func() {
		began := time.Now()
		if err := refreshAdvice(ctx, x, st, book, f, pods, clock()); err != nil {
			if ctx.Err() != nil {
				return // shutting down: not a failed refresh
			}
			log.Warn("advice not refreshed; serving the previous one", "err", err)
			return
		}
		log.Info("advice refreshed", "window", f.window.String(), "took", time.Since(began).Round(time.Millisecond))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		adviceprom.Every(ctx, f.refresh, refreshNow)
	}()
	srv := &http.Server{Handler: metricsMux(x), ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving advice", "listen", f.listen, "window", f.window.String(), "refresh", f.refresh.String())
	return serveWithWebConfig(ctx, srv, f.listen, f.webConfig)
}

// refreshAdvice has x advise on the --window that ended at the last whole
// hour before now; a failure keeps the previous advice.
func refreshAdvice(ctx context.Context, x *adviceprom.Refresher, st ledger.Store, book *pricebook.Book, f adviseFlags, pods []advise.Pod, now time.Time) error {
	to := now.Truncate(time.Hour)
	from := to.Add(-f.window)
	err := x.Refresh(ctx, now, func(ctx context.Context) (*advise.Plan, error) {
		res, err := buildAdvice(ctx, st, book, from, to, pods, f.options())
		if err != nil {
			return nil, err
		}
		return res.Plan, nil
	})
	if err != nil {
		return fmt.Errorf("cannot advise on [%s, %s): %w", ledger.FormatTime(from), ledger.FormatTime(to), err)
	}
	return nil
}
