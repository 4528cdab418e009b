package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every page of gpuledger serve in real Chromium: it renders under the
// page's Content-Security-Policy without a refusal, shows the same money
// as gpuledger report (the month's total, the advice's saving), and its
// screenshots, at a desktop and a narrow width, are not blank. With
// GPULEDGER_SCREENSHOTS=DIR the screenshots are kept there (the docs'
// serve-*.png: GPULEDGER_SCREENSHOTS=$PWD/docs GPULEDGER_SERVE_DAYS=45).
func TestServePagesInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("GPULEDGER_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("chromium not found and GPULEDGER_REQUIRE_INTEGRATION=1")
		}
		t.Skip("chromium not installed")
	}
	db, prices := serveFixture(t)
	hs := startServe(t, db, prices)
	var rep struct {
		Total json.Number `json:"total"`
	}
	if err := json.Unmarshal(cliReport(t, db, prices, "2026-11", "json"), &rep); err != nil {
		t.Fatal(err)
	}
	_, adviceJSON := getBody(t, hs.URL+"/advice/2026-11.json")
	var adv struct {
		Saving json.Number `json:"saving"`
	}
	if err := json.Unmarshal(adviceJSON, &adv); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("GPULEDGER_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	for _, p := range []struct {
		name, path string
		want       []string
		narrow     bool
	}{
		{"index", "/", []string{"Bills by month", "November 2026", grouped(rep.Total.String())}, true},
		{"report", "/reports/2026-11", []string{"November 2026", grouped(rep.Total.String())}, false},
		{"advice", "/advice/2026-11", []string{"GPU sharing advice", "Kept as they are", adv.Saving.String()}, true},
		{"error", "/reports/2025-01", []string{"no bill for 2025-01"}, false},
	} {
		dom, log := chromiumRun(t, chromium, "--dump-dom", hs.URL+p.path)
		for _, w := range p.want {
			if !strings.Contains(dom, w) {
				t.Errorf("%s in Chromium lacks %q", p.path, w)
			}
		}
		if strings.Contains(log, "Refused to") || strings.Contains(log, "Content Security Policy") {
			t.Errorf("%s: Chromium refused something under the page's policy:\n%s", p.path, log)
		}
		sizes := map[string]string{"": "1280,2000"}
		if p.narrow {
			sizes["-narrow"] = "420,2400"
		}
		for suffix, size := range sizes {
			shot := filepath.Join(shots, "serve-"+p.name+suffix+".png")
			chromiumRun(t, chromium, "--window-size="+size, "--screenshot="+shot, hs.URL+p.path)
			if _, n := decodePNG(t, shot); n < 20 {
				t.Errorf("%s: screenshot %s has %d distinct colours: blank or unstyled", p.path, shot, n)
			}
		}
	}
}

// chromiumRun runs headless Chromium once and returns its stdout and log.
func chromiumRun(t *testing.T, chromium string, args ...string) (stdout, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, chromium, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// grouped writes a decimal amount with thousands separators, as the
// report's page does ("9240.00" is "9,240.00").
func grouped(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		return b.String() + "." + frac
	}
	return b.String()
}
