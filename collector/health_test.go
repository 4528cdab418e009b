package collector

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/gpuledger/gpuledger/attribution"
)

// A failing source is logged once per failure streak, counted every time.
func TestHealthLogsOncePerStreak(t *testing.T) {
	var buf bytes.Buffer
	h := newHealth(slog.New(slog.NewTextHandler(&buf, nil)))
	boom := errors.New("kubelet socket gone")
	for range 10 {
		h.report(SourcePodResources, boom)
	}
	h.report(SourcePodResources, nil)
	h.report(SourcePodResources, boom)
	if n := strings.Count(buf.String(), "source failing"); n != 2 {
		t.Errorf("logged the failure %d times over two streaks, want 2:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), "source recovered"); n != 1 {
		t.Errorf("logged recovery %d times, want 1", n)
	}
	if h.errors[SourcePodResources] != 11 || h.up[SourcePodResources] {
		t.Errorf("errors %d up %v, want 11 and down", h.errors[SourcePodResources], h.up[SourcePodResources])
	}
}

func TestHealthLogsEachAnomalyKeyOnce(t *testing.T) {
	var buf bytes.Buffer
	h := newHealth(slog.New(slog.NewTextHandler(&buf, nil)))
	for range 3 {
		h.anomaly(attribution.Anomaly{Kind: "bad_device_id", Key: "GPU-x", Detail: "bad"}, 1)
		h.anomaly(attribution.Anomaly{Kind: "bad_device_id", Key: "GPU-y", Detail: "bad"}, 1)
	}
	if n := strings.Count(buf.String(), "attribution input problem"); n != 2 {
		t.Errorf("logged %d lines for two keys seen three times, want 2", n)
	}
	if h.anomalies["bad_device_id"] != 6 {
		t.Errorf("counted %d anomalies, want 6", h.anomalies["bad_device_id"])
	}
}
