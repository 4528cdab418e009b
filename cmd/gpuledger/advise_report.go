package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuledger/gpuledger/advisor/advicereport"
	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/pricebook"
	"github.com/gpuledger/gpuledger/billing/report"
	"github.com/gpuledger/gpuledger/ledger"
)

// checkAdvice validates report's --advice and --pods: the savings are a
// section of the JSON and HTML; the finance CSV and FOCUS files keep
// their fixed columns.
func (f reportFlags) checkAdvice() error {
	switch {
	case f.advicePods != "" && !f.advice:
		return errors.New("report: --pods needs --advice")
	case f.advice && f.format != reportJSON && f.format != reportHTML:
		return fmt.Errorf("report: --advice adds a savings section to json and html, not to %s", f.format)
	}
	return nil
}

// adviceAttacher returns what report --advice runs on the built report:
// gpuledger advise over the same period, ledger and book (default
// thresholds), its plan attached as the report's savings.
func adviceAttacher(ctx context.Context, st ledger.Store, book *pricebook.Book, podsFile string) (func(*report.Report) error, error) {
	var pods []advise.Pod
	if podsFile != "" {
		var err error
		if pods, err = advicereport.LoadPods(podsFile); err != nil {
			return nil, err
		}
	}
	return func(rep *report.Report) error {
		res, err := advicereport.For(ctx, st, book, rep, pods, advise.Options{})
		if err != nil {
			return fmt.Errorf("cannot add advice to the report: %w", err)
		}
		rep.Savings = advicereport.Savings(res.Plan)
		return nil
	}, nil
}
