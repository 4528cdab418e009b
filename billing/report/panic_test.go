package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/ledger/filestore"
)

// findingsPanic is the embedded ledger whose findings panic, as a defect
// in a read would.
type findingsPanic struct{ *filestore.FileStore }

func (findingsPanic) Findings(context.Context, time.Time, time.Time, func(attribution.Finding) error) error {
	panic("a defect in the findings")
}

// A panic in the reads the report makes beside pricing (in a goroutine
// of their own) is raised again in Build's caller, who can recover it
// (serve does, and answers 500), never left to end the process.
func TestAPanicInTheReadsIsTheCallers(t *testing.T) {
	b := bookFor(t, "USD", "UTC", "allocation", "shared", map[string]string{"A100": "2"}, "2")
	from, to, _ := Month("2026-11", b.Location)
	gpus := []gpu{{node: "n", uuid: "GPU-1", model: "A100", mode: "exclusive", from: from, to: to}}
	tenants := []tenant{{gpu: 0, ns: "ads", pod: "p", container: "c", team: "ads", share: 1, busy: 0.5, start: from, end: to}}
	st := fileLedger(t, ledgerRows(gpus, tenants, time.Hour), nil)
	got := func() (p any) {
		defer func() { p = recover() }()
		_, _ = Build(context.Background(), findingsPanic{st}, b, from, to)
		return nil
	}()
	if got == nil || !strings.Contains(fmt.Sprint(got), "a defect in the findings") {
		t.Fatalf("Build raised %v, want the findings' panic", got)
	}
}
