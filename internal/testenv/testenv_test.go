package testenv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	Eventually(t, time.Minute, func() error {
		if n.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if got := n.Load(); got != 3 {
		t.Errorf("cond called %d times, want 3 (stops once it holds)", got)
	}
}

// A condition that never holds ends at the deadline with its last error:
// the wait is bounded.
func TestEventuallyErrStopsAtTheDeadline(t *testing.T) {
	calls := 0
	err := EventuallyErr(50*time.Millisecond, func() error {
		calls++
		return errors.New("the server answers 503")
	})
	if err == nil || !strings.Contains(err.Error(), "the server answers 503") || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("err = %v, want the deadline and the last error", err)
	}
	if calls < 2 {
		t.Errorf("cond called %d times before giving up", calls)
	}
}

// RequireIntegration skips by default and fails under
// GPULEDGER_REQUIRE_INTEGRATION=1; each case runs in a child test process
// so the parent can see the outcome.
func TestRequireIntegrationSkipsOrFails(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		RequireIntegration(t, "widget not found", "install the widget package")
		t.Fatal("RequireIntegration returned")
	}
	for _, c := range []struct {
		require, want string
		fails         bool
	}{
		{"", "skipping: widget not found (install the widget package)", false},
		{"1", "widget not found, and GPULEDGER_REQUIRE_INTEGRATION=1 requires it (install the widget package)", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireIntegrationSkipsOrFails$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", EnvRequire+"="+c.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.fails {
			t.Errorf("%s=%q: failed=%v, want %v\n%s", EnvRequire, c.require, failed, c.fails, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s=%q: output lacks %q:\n%s", EnvRequire, c.require, c.want, out)
		}
	}
}
