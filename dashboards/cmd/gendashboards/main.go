// Command gendashboards writes gpuledger's Grafana dashboards as JSON.
//
//	go run ./dashboards/cmd/gendashboards -out dashboards/json
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/gpuledger/gpuledger/dashboards"
)

func main() {
	out := flag.String("out", "dashboards/json", "directory to write the dashboards into")
	flag.Parse()
	if err := run(*out); err != nil {
		slog.Error("cannot generate dashboards", "err", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	return dashboards.WriteDir(dir)
}
