// Package testenv holds what gpuledger's tests share about their
// environment: whether a missing real component (ClickHouse, Chromium,
// Prometheus, helm, kube-apiserver) skips a test or fails it, and a
// deadline-bounded wait for a condition that another process or goroutine
// makes true.
package testenv

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// EnvRequire, set to 1 (as CI does), turns a missing component from a
// skip into a failure, so a broken install cannot pass as green.
const EnvRequire = "GPULEDGER_REQUIRE_INTEGRATION"

// Required reports whether integration components are required.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// RequireIntegration stops t because what (a component and why it is
// missing) is unavailable: a skip that says how to get it, or a failure
// when GPULEDGER_REQUIRE_INTEGRATION=1.
func RequireIntegration(t testing.TB, what, how string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s, and %s=1 requires it (%s)", what, EnvRequire, how)
	}
	t.Skipf("skipping: %s (%s)", what, how)
}

// poll is how often Eventually looks again: often enough that a test does
// not wait noticeably past the moment cond holds, rarely enough not to load
// a shared 2-core machine.
const poll = 20 * time.Millisecond

// Eventually calls cond until it returns nil and fails t when it has not
// within timeout, with cond's last error. The timeout only stops a hung
// test; it asserts nothing about speed, so give it room for a loaded
// machine. cond may itself fail t (t.Fatal) to stop early.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := EventuallyErr(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// EventuallyErr is Eventually for callers without a testing.TB (a
// TestMain, a harness): it returns the failure instead.
func EventuallyErr(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(poll)
	}
}
