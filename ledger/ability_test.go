package ledger

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/nodelabel"
	"github.com/gpuledger/gpuledger/quota"
)

type bare struct{}

type keeper struct{}

func (keeper) QuotaChanges(context.Context, time.Time, time.Time, func(quota.Change) error) error {
	return nil
}
func (keeper) AppendQuota(context.Context, []quota.Change) error { return nil }
func (keeper) NodeLabels(context.Context, string, time.Time) (map[string]string, error) {
	return nil, nil
}
func (keeper) AppendNodeLabels(context.Context, []nodelabel.Change) error { return nil }

// Each helper names the store that lacks the ability and what it lacks,
// and hands over a store that has it.
func TestAbilities(t *testing.T) {
	for name, c := range map[string]struct {
		ask  func(any) (any, error)
		want string
	}{
		"Rows":           {func(s any) (any, error) { return Rows(s) }, "ledger.bare does not stream its rows"},
		"Quota":          {func(s any) (any, error) { return Quota(s) }, "ledger ledger.bare does not keep quota changes"},
		"QuotaStore":     {func(s any) (any, error) { return QuotaStore(s) }, "ledger ledger.bare does not keep quota changes"},
		"NodeLabels":     {func(s any) (any, error) { return NodeLabels(s) }, "ledger ledger.bare does not keep node labels"},
		"NodeLabelStore": {func(s any) (any, error) { return NodeLabelStore(s) }, "ledger ledger.bare does not keep node labels"},
	} {
		if _, err := c.ask(bare{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s of a bare store: err %v, want %q", name, err, c.want)
		}
		if _, err := c.ask(nil); err == nil || !strings.Contains(err.Error(), "(none)") {
			t.Errorf("%s of no store: err %v", name, err)
		}
		if name == "Rows" {
			continue
		}
		if got, err := c.ask(keeper{}); err != nil || got == nil {
			t.Errorf("%s of a keeper: %v, %v", name, got, err)
		}
	}
}
