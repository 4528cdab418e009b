// Command genrules writes alerts/prometheusrule.yaml, the Prometheus
// operator's PrometheusRule wrapping the groups of alerts/gpuledger-rules.yaml.
//
//	go run ./alerts/cmd/genrules [-rules alerts/gpuledger-rules.yaml] [-out alerts/prometheusrule.yaml] [-grafana-url URL]
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/gpuledger/gpuledger/alerts"
)

func main() {
	in := flag.String("rules", "alerts/"+alerts.RulesFile, "rule file to wrap")
	out := flag.String("out", "alerts/"+alerts.PrometheusRuleFile, "PrometheusRule file to write")
	grafana := flag.String("grafana-url", "", "Grafana root URL to prefix dashboard_url annotations with (empty: keep them relative)")
	flag.Parse()
	if err := run(*in, *out, alerts.Options{GrafanaURL: *grafana}); err != nil {
		slog.Error("cannot generate PrometheusRule", "err", err)
		os.Exit(1)
	}
}

func run(in, out string, opts alerts.Options) error {
	rules, err := os.ReadFile(in)
	if err != nil {
		return fmt.Errorf("cannot read rules: %w", err)
	}
	data, err := alerts.PrometheusRule(rules, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("cannot write PrometheusRule: %w", err)
	}
	return nil
}
