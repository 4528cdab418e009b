package collector

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/collector/exposition"
	"github.com/gpuledger/gpuledger/collector/procfs"
)

// Every kind attribution emits is counted under its own reason in
// gpuledger_attribution_anomalies_total, kinds added after this collector
// was written included, and each (kind, key) is logged once.
func TestAnomaliesCountedByKindAndLoggedOnce(t *testing.T) {
	kinds := []string{
		attribution.AnomalyBadDeviceID, attribution.AnomalyUnknownDevice, attribution.AnomalyHAMiMismatch,
		attribution.AnomalyBadAnnotation, attribution.AnomalyUnknownOwner, attribution.AnomalyUnknownGPU,
		attribution.AnomalyEnergyBackward, attribution.AnomalyBadWindow,
		// Kinds of the real-cluster shapes (HAMi as deployed, DRA claims),
		// as strings: the collector must not need to know them.
		"hami_unlisted_gpu", "annotation_changed", "non_gpu_claim", "unmapped_claim",
		"bad_replicas", "forged_team", "hami_limits_mismatch", "hami_zero_share", "hami_duplicate_gpu",
	}
	var logs bytes.Buffer
	exp := exposition.New("node-a", exposition.Options{})
	c := New(Config{Node: "node-a"}, nil, Sources{}, nil, exp, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	for cycle := range 3 {
		var res attribution.CycleResult
		for _, k := range kinds {
			// Two keys per kind, the second one twice per cycle.
			res.Anomalies = append(res.Anomalies,
				attribution.Anomaly{Kind: k, Key: "key-a", Detail: "detail"},
				attribution.Anomaly{Kind: k, Key: "key-b", Detail: "detail"},
				attribution.Anomaly{Kind: k, Key: "key-b", Detail: "detail"})
		}
		if err := c.emit(context.Background(), res, attribution.Observation{}, time.Millisecond); err != nil {
			t.Fatalf("cycle %d: emit: %v", cycle, err)
		}
	}
	body := scrape(t, exp)
	for _, k := range kinds {
		want := `gpuledger_attribution_anomalies_total{kind="` + k + `",node="node-a"} 9`
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
		for _, key := range []string{"key-a", "key-b"} {
			if n := strings.Count(logs.String(), "kind="+k+" key="+key+" "); n != 1 {
				t.Errorf("%s %s logged %d times, want once", k, key, n)
			}
		}
	}
}

// Malformed cgroup lines the resolver skipped are counted as anomalies of
// their own kind, logged once however many processes have them.
func TestMalformedCgroupLinesAreAnomalies(t *testing.T) {
	root := t.TempDir()
	const uid = "48d25824-cbe2-4fdc-9928-5bb49e05473d"
	const ctr = "c40dff48f1d53c3f07a50aa12bb9ae0e58c0927dc6b1d77e3f166784722642ad"
	for pid, cg := range map[string]string{
		"100": "junk\n0::/kubepods/besteffort/pod" + uid + "/" + ctr + "\n",
		"101": "0::/kubepods/besteffort/pod" + uid + "/" + ctr + "\nmore junk\nx\n",
		"102": "0::/system.slice/nvidia-persistenced.service\n",
	} {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"cgroup": cg, "comm": "python3\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var logs bytes.Buffer
	exp := exposition.New("node-a", exposition.Options{})
	c := New(Config{Node: "node-a"}, nil, Sources{Procs: procfs.NewResolver(root)}, nil, exp, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	for cycle, pids := range [][]uint32{{100, 102}, {100, 101, 102}, {100, 101, 102}} {
		obs := attribution.Observation{Degraded: map[string]bool{}}
		for _, pid := range pids {
			obs.Processes = append(obs.Processes, attribution.Process{PID: pid, GPU: "GPU-a", Device: "GPU-a"})
		}
		c.resolveOwners(&obs)
		for _, p := range obs.Processes {
			if p.PID != 102 && p.Owner.ContainerID != ctr {
				t.Errorf("cycle %d: pid %d owner %+v, want container %s", cycle, p.PID, p.Owner, ctr)
			}
		}
		if err := c.emit(context.Background(), attribution.CycleResult{}, obs, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// pid 100: one line, read once (the owner cache); pid 101: two lines.
	if n := c.health.anomalies[AnomalyMalformedCgroupLine]; n != 3 {
		t.Errorf("counted %d malformed cgroup lines, want 3", n)
	}
	if !strings.Contains(scrape(t, exp), `gpuledger_attribution_anomalies_total{kind="malformed_cgroup_line",node="node-a"} 3`) {
		t.Error("malformed cgroup lines missing from the metrics")
	}
	if n := strings.Count(logs.String(), "kind="+AnomalyMalformedCgroupLine); n != 1 {
		t.Errorf("malformed cgroup lines logged %d times, want once:\n%s", n, logs.String())
	}
	if c.health.up[SourceProcfs] != true {
		t.Error("procfs marked down for skipped lines in files that named their owners")
	}
}

func scrape(t *testing.T, exp *exposition.Exporter) string {
	t.Helper()
	rec := httptest.NewRecorder()
	exp.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
