package scenario

import (
	"strings"
	"testing"
	"time"
)

// TestDurationField goes through YAML so that numbers and quoted strings
// take the path they take in a real file.
func TestDurationField(t *testing.T) {
	cases := []struct {
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{"90s", 90 * time.Second, ""},
		{"10m", 10 * time.Minute, ""},
		{"1.5", 1500 * time.Millisecond, ""},
		{"600", 600 * time.Second, ""},
		{`"600"`, 600 * time.Second, ""},
		{"'1.5'", 1500 * time.Millisecond, ""},
		{"166ms", 166 * time.Millisecond, ""},
		{"46.5s", 46500 * time.Millisecond, ""},
		{"0.25", 250 * time.Millisecond, ""},
		{"59m58.5s", 59*time.Minute + 58500*time.Millisecond, ""},
		{"1h", time.Hour, ""},
		// Parsed, then outside pollInterval's bounds.
		{"0.000001", 0, "1µs is outside [100ms,1h0m0s]"},
		{"1h2m3s", 0, "1h2m3s is outside [100ms,1h0m0s]"},
		{"-1s", 0, `"-1s" is negative`},
		{"-1.5", 0, "-1.5 is negative"},
		{"abc", 0, `"abc" is neither`},
		{`""`, 0, "empty duration"},
		{".inf", 0, `".inf" is neither`},
		{"NaN", 0, "not a finite number"},
		{"1e300", 0, "out of range"},
		{"[1s]", 0, "expected a scalar, got a list"},
	}
	for _, tc := range cases {
		t.Run(tc.yaml, func(t *testing.T) {
			// A day of ledger interval: any valid poll fits under it.
			y := edit(t, "pollInterval: 1s", "pollInterval: "+tc.yaml, "ledgerInterval: 60s", "ledgerInterval: 24h")
			s, err := Parse([]byte(y), "")
			if tc.wantErr != "" {
				wantErr(t, err, "pollInterval", tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if s.PollInterval != tc.want {
				t.Errorf("pollInterval %s = %v, want %v", tc.yaml, s.PollInterval, tc.want)
			}
		})
	}
}

func TestDurationDefaults(t *testing.T) {
	y := edit(t,
		"pollInterval: 1s\n", "",
		"ledgerInterval: 60s\n", "",
		"driverSamplePeriod: 166ms\n", "",
		"detection: {idleWindow: 10m, idleThreshold: 0.05, noisyWindow: 1m}\n", "")
	s, err := Parse([]byte(y), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := []time.Duration{s.PollInterval, s.LedgerInterval, s.DriverSamplePeriod, s.Detection.IdleWindow, s.Detection.NoisyWindow}
	want := []time.Duration{time.Second, time.Minute, 166666666 * time.Nanosecond, 10 * time.Minute, time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("default %d = %v, want %v", i, got[i], want[i])
		}
	}
	if s.Detection.IdleThreshold != 0.05 {
		t.Errorf("idleThreshold default = %v, want 0.05", s.Detection.IdleThreshold)
	}
}

func TestParseDurationPlain(t *testing.T) {
	for in, want := range map[string]time.Duration{"2": 2 * time.Second, " 3s ": 3 * time.Second, "0": 0} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDuration("9999999999999h"); err == nil || !strings.Contains(err.Error(), "9999999999999h") {
		t.Errorf("ParseDuration of an overflowing duration: err = %v", err)
	}
}
