package dcgmsource

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestRemoteArgs(t *testing.T) {
	for in, want := range map[string][]string{
		"":                            {"localhost:5555", "0"},
		"10.0.0.5:5555":               {"10.0.0.5:5555", "0"},
		"dcgm.gpu-system.svc:5555":    {"dcgm.gpu-system.svc:5555", "0"},
		"/run/nvidia/hostengine.sock": {"/run/nvidia/hostengine.sock", "1"},
		"unix:///run/dcgm.sock":       {"unix:///run/dcgm.sock"},
		"TCP://host:5555":             {"TCP://host:5555"},
	} {
		if got := remoteArgs(in); !reflect.DeepEqual(got, want) {
			t.Errorf("remoteArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewDCGMClientRejectsUnknownMode(t *testing.T) {
	c, err := NewDCGMClient(context.Background(), "standalone", "", nil)
	if err == nil || c != nil || !strings.Contains(err.Error(), `unknown mode "standalone"`) {
		t.Fatalf("got %v, %v", c, err)
	}
}

// Without libdcgm (as on build and CI machines) starting DCGM must fail
// with a clear error, not crash.
func TestNewDCGMClientWithoutLibrary(t *testing.T) {
	c, err := NewDCGMClient(context.Background(), ModeEmbedded, "", nil)
	if err == nil {
		_ = c.Close()
		t.Skip("libdcgm is installed here; nothing to test")
	}
	if c != nil || !strings.HasPrefix(err.Error(), "cannot start DCGM: libdcgm not found") {
		t.Fatalf("got %v, %v", c, err)
	}
}
