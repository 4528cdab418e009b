package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestCollectRetentionFlag: --ledger-retention takes Prometheus durations
// (days included), defaults to keeping everything, and a bad value is an
// error naming the flag.
func TestCollectRetentionFlag(t *testing.T) {
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil || f.retention != 0 {
		t.Fatalf("default: retention %v, %v; want 0", f.retention, err)
	}
	for v, want := range map[string]time.Duration{"400d": 400 * 24 * time.Hour, "9600h": 9600 * time.Hour, "1y": 365 * 24 * time.Hour} {
		f, err := parseCollectFlags([]string{"--node", "n", "--ledger-retention", v})
		if err != nil || f.retention != want {
			t.Errorf("--ledger-retention %s: %v, %v; want %v", v, f.retention, err, want)
		}
	}
	for _, bad := range []string{"forever", "-5d", "10"} {
		_, err := parseCollectFlags([]string{"--node", "n", "--ledger-retention", bad})
		if err == nil || !strings.Contains(err.Error(), "ledger-retention") {
			t.Errorf("--ledger-retention %q: err %v, want one naming the flag", bad, err)
		}
	}
}

// TestCollectShutdownAndListenFlags: the drain deadline defaults below a
// 30 s grace period and is bounded; the collector listens on its own port,
// not dcgm-exporter's 9400.
func TestCollectShutdownAndListenFlags(t *testing.T) {
	t.Setenv("GPULEDGER_LISTEN", "") // restored after the test
	os.Unsetenv("GPULEDGER_LISTEN")
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil || f.shutdownTimeout != 25*time.Second || f.listen != ":9753" {
		t.Fatalf("defaults: shutdown %v, listen %q, %v; want 25s and :9753", f.shutdownTimeout, f.listen, err)
	}
	if f, err := parseCollectFlags([]string{"--node", "n", "--shutdown-timeout", "0"}); err != nil || f.shutdownTimeout != 0 {
		t.Errorf("--shutdown-timeout 0 (ship nothing at exit): %v, %v", f.shutdownTimeout, err)
	}
	for _, bad := range []string{"-1s", "11m"} {
		_, err := parseCollectFlags([]string{"--node", "n", "--shutdown-timeout", bad})
		if err == nil || !strings.Contains(err.Error(), "--shutdown-timeout") {
			t.Errorf("--shutdown-timeout %s: err %v, want one naming the flag", bad, err)
		}
	}
}

// TestCollectIntervalBounds: a poll of a nanosecond (which would spin) or a
// ledger interval outside 1s..24h is refused with the flag named, as a
// scenario's intervals are.
func TestCollectIntervalBounds(t *testing.T) {
	for _, args := range [][]string{
		{"--poll-interval", "1ns"},
		{"--poll-interval", "99ms"},
		{"--poll-interval", "2h", "--ledger-interval", "3h"},
		{"--ledger-interval", "500ms", "--poll-interval", "100ms"},
		{"--ledger-interval", "25h"},
		{"--poll-interval", "2m", "--ledger-interval", "1m"},
	} {
		_, err := parseCollectFlags(append([]string{"--node", "n"}, args...))
		if err == nil || !strings.Contains(err.Error(), "interval") {
			t.Errorf("%v: err %v, want one naming the interval flag", args, err)
		}
	}
	if _, err := parseCollectFlags([]string{"--node", "n", "--poll-interval", "100ms", "--ledger-interval", "1s"}); err != nil {
		t.Errorf("the bounds themselves are allowed: %v", err)
	}
}

// TestClusterFlags: --cluster defaults to the default cluster (env
// GPULEDGER_CLUSTER), and collect, report and serve refuse a name that is
// not a DNS label, naming the flag.
func TestClusterFlags(t *testing.T) {
	t.Setenv("GPULEDGER_CLUSTER", "")
	os.Unsetenv("GPULEDGER_CLUSTER")
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil || f.cluster != "default" || f.clusterID != "" {
		t.Fatalf("default: cluster %q, id %q, %v; want default and none (the kube-system UID, read at start)", f.cluster, f.clusterID, err)
	}
	t.Setenv("GPULEDGER_CLUSTER", "eu-west-1")
	if f, err = parseCollectFlags([]string{"--node", "n", "--cluster-id", "uid-1"}); err != nil || f.cluster != "eu-west-1" || f.clusterID != "uid-1" {
		t.Fatalf("from the environment: cluster %q, id %q, %v", f.cluster, f.clusterID, err)
	}
	for _, bad := range []string{"EU", "eu_west", "-eu", "eu-", strings.Repeat("a", 64), "a/b"} {
		if _, err := parseCollectFlags([]string{"--node", "n", "--cluster", bad}); err == nil || !strings.Contains(err.Error(), "--cluster") {
			t.Errorf("collect --cluster %q: %v, want an error naming --cluster", bad, err)
		}
		if _, err := parseReportFlags([]string{"--period", "2026-11", "--prices", "p.yaml", "--ledger", "l.db", "--cluster", bad}); err == nil || !strings.Contains(err.Error(), "--cluster") {
			t.Errorf("report --cluster %q: %v, want an error naming --cluster", bad, err)
		}
		if _, err := parseServeFlags([]string{"--prices", "p.yaml", "--ledger", "l.db", "--cluster", bad}); err == nil || !strings.Contains(err.Error(), "--cluster") {
			t.Errorf("serve --cluster %q: %v, want an error naming --cluster", bad, err)
		}
	}
	if _, err := parseCollectFlags([]string{"--node", "n", "--cluster-id", "has space"}); err == nil || !strings.Contains(err.Error(), "--cluster-id") {
		t.Errorf("collect --cluster-id with a space: %v", err)
	}
}

// TestCollectShipperPacingFlags: the shipper's pacing defaults to the
// shipper's own (30 s between rounds, 20 s of wake jitter, rollups 5 min
// after an hour plus up to 5 min); 0 turns each off (the shipper's
// "negative: none"), and each is bounded, with an error naming the flag.
func TestCollectShipperPacingFlags(t *testing.T) {
	f, err := parseCollectFlags([]string{"--node", "n"})
	if err != nil {
		t.Fatal(err)
	}
	if o := shipperPacing(f); o.MinInterval != 30*time.Second || o.WakeJitter != 20*time.Second || o.RollupDelay != 5*time.Minute || o.RollupJitter != 5*time.Minute {
		t.Errorf("defaults: %+v", o)
	}
	f, err = parseCollectFlags([]string{"--node", "n", "--ship-min-interval", "2m", "--ship-wake-jitter", "0", "--rollup-delay", "15m", "--rollup-jitter", "0s"})
	if err != nil {
		t.Fatal(err)
	}
	if o := shipperPacing(f); o.MinInterval != 2*time.Minute || o.WakeJitter != -1 || o.RollupDelay != 15*time.Minute || o.RollupJitter != -1 {
		t.Errorf("set: %+v", o)
	}
	for flag, bad := range map[string]string{"ship-min-interval": "11m", "ship-wake-jitter": "-1s", "rollup-delay": "2h", "rollup-jitter": "90m"} {
		_, err := parseCollectFlags([]string{"--node", "n", "--" + flag, bad})
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("--%s %s: err %v, want one naming the flag", flag, bad, err)
		}
	}
}
