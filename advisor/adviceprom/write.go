// Package adviceprom writes an advise plan as the gpuledger_advice_*
// Prometheus series (text exposition), which a scheduled `gpuledger advise
// --format prom` hands to node_exporter's textfile collector or a
// Pushgateway, and which the advice dashboard reads. The alert and
// dashboard reference tests read the families from here, so a panel cannot
// name a series this writer does not produce.
package adviceprom

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuledger/gpuledger/advisor/advise"
)

// Write writes a plan as Prometheus text exposition, for
// node_exporter's textfile collector or a Pushgateway after each
// scheduled advise run: the gpuledger_advice_* series dashboards read.
func Write(w io.Writer, p *advise.Plan) error {
	reg := prometheus.NewRegistry()
	// Only money carries a currency: a recommendation's GPUs, minutes
	// and flag are the same whatever the book's currency.
	labels := []string{"kind", "team", "namespace", "workloads", "gpu_model"}
	saving := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_saving",
		Help: "Saving the recommendation would have made over the advised period, in the price book's currency (capacity freed x rate)."}, append(labels, "currency"))
	before := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_gpus_before",
		Help: "GPUs the recommendation's workloads held on average while they ran."}, labels)
	after := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_gpus_after",
		Help: "GPUs the recommendation's proposed layout holds."}, labels)
	contention := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_contention_minutes",
		Help: "Minutes of the period where the usage replayed on the proposed layout exceeds its capacity (use that would have waited, or for a reclaim been lost)."}, labels)
	incomplete := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_incomplete",
		Help: "1 when the recommendation's figures are incomplete (unpriced model, malformed annotation...)."}, labels)
	total := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_saving_total",
		Help: "Sum of the period's recommended savings, in the price book's currency."}, []string{"currency"})
	count := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuledger_advice_recommendations",
		Help: "Recommendations of the advised period, by kind."}, []string{"kind"})
	periodEnd := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuledger_advice_period_end_timestamp_seconds",
		Help: "End of the advised period (Unix seconds)."})
	reg.MustRegister(saving, before, after, contention, incomplete, total, count, periodEnd)
	money := func(minor int64) float64 {
		return float64(minor) / math.Pow10(p.Currency.MinorUnit)
	}
	for _, k := range []advise.Kind{advise.Reclaim, advise.RightSize, advise.Consolidate, advise.Keep} {
		count.WithLabelValues(string(k))
	}
	for _, r := range p.Recommendations {
		lv := []string{string(r.Kind), r.Team, r.Namespace, strings.Join(r.Workloads, ","), r.Model}
		saving.WithLabelValues(append(lv, p.Currency.Code)...).Set(money(r.SavingMinor))
		before.WithLabelValues(lv...).Set(round6(r.BeforeGPUs))
		after.WithLabelValues(lv...).Set(round6(r.AfterGPUs))
		contention.WithLabelValues(lv...).Set(float64(r.Contention.Minutes))
		inc := 0.0
		if len(r.Incomplete) > 0 {
			inc = 1
		}
		incomplete.WithLabelValues(lv...).Set(inc)
		count.WithLabelValues(string(r.Kind)).Inc()
	}
	total.WithLabelValues(p.Currency.Code).Set(money(p.SavingMinor))
	periodEnd.Set(float64(p.To.Unix()))
	return encode(w, reg, "advice series")
}

// encode writes what reg gathers as text exposition.
func encode(w io.Writer, reg *prometheus.Registry, what string) error {
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("cannot gather %s: %w", what, err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("cannot write %s: %w", what, err)
		}
	}
	return nil
}

// round6 keeps GPU counts to a micro-GPU, as the ledger prints quantities.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
