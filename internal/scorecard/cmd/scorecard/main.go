// Command scorecard runs gpuledger on scenarios with ground truth and
// scores its output: for each directory S under SCENARIOS_DIR it runs
// `BIN simulate --scenario S/scenario.yaml --out OUT_DIR/S` and checks
// OUT_DIR/S against S/truth.json (package scorecard).
//
//	scorecard BIN SCENARIOS_DIR OUT_DIR [NAME_FILTER]
//
// It prints one `ok` or `FAIL` line per scenario (with up to eight of a
// failure's problems under it) and ends with
// `scenarios: P/N pass; worst used error X%`. It exits 1 when any
// scenario fails, 2 on bad usage.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
)

func main() {
	if len(os.Args) < 4 || len(os.Args) > 5 {
		fmt.Fprintln(os.Stderr, "usage: scorecard BIN SCENARIOS_DIR OUT_DIR [NAME_FILTER]")
		os.Exit(2)
	}
	filter := ""
	if len(os.Args) == 5 {
		filter = os.Args[4]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s := suite{bin: os.Args[1], scenarios: os.Args[2], out: os.Args[3], filter: filter, w: os.Stdout}
	ok, err := s.run(ctx)
	if err != nil {
		slog.Error("scorecard failed", "err", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
