package web

import (
	"html/template"
	"math/big"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuledger/gpuledger/billing/report"
)

// The coverage gaps of the running month (billing/report/gaps.go), per
// node, from the month-to-date report /metrics already serves.
var (
	gapSecondsDesc = prometheus.NewDesc("gpuledger_coverage_gap_gpu_seconds",
		"GPU-seconds of the current calendar month that GPUs of this node have no ledger rows for while their node had not left cleanly (coverage gaps: never billed).",
		[]string{"node"}, nil)
	silentDesc = prometheus.NewDesc("gpuledger_coverage_node_silent_seconds",
		"How long this node's GPUs have sent no ledger rows while the rest of the fleet's data goes on (from its last row to the end of the month's data), for nodes that stopped without leaving cleanly.",
		[]string{"node"}, nil)
)

// CoverageMetricNames are the coverage series serve's /metrics exports.
func CoverageMetricNames() []string {
	return []string{"gpuledger_coverage_gap_gpu_seconds", "gpuledger_coverage_node_silent_seconds"}
}

func describeGaps(ch chan<- *prometheus.Desc) {
	ch <- gapSecondsDesc
	ch <- silentDesc
}

// collectGaps exports rep's gaps per node; nothing for a month without any.
func collectGaps(ch chan<- prometheus.Metric, rep *report.Report) {
	c := rep.Coverage
	if c.Empty() {
		return
	}
	for node, h := range c.ByNode {
		secs, _ := new(big.Rat).Mul(h, big.NewRat(3600, 1)).Float64()
		ch <- prometheus.MustNewConstMetric(gapSecondsDesc, prometheus.GaugeValue, secs, node)
	}
	for node, since := range c.Silent {
		ch <- prometheus.MustNewConstMetric(silentDesc, prometheus.GaugeValue, c.DataEnd.Sub(since).Seconds(), node)
	}
}

// monthGaps is one month's coverage gaps section on the index page.
type monthGaps struct {
	Month, Title string
	Section      template.HTML
}

// gapSections are the sections of the bills' months that have gaps,
// newest first, as the report page shows them.
func gapSections(bills []monthBill) ([]monthGaps, error) {
	var out []monthGaps
	for _, b := range bills {
		h, err := b.rep.GapsHTML()
		if err != nil {
			return nil, err
		}
		if h != "" {
			out = append(out, monthGaps{Month: b.month, Title: b.start.Format("January 2006"), Section: h})
		}
	}
	return out, nil
}
