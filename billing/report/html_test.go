package report

import (
	"bytes"
	"context"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/attribution"
	"github.com/gpuledger/gpuledger/internal/testenv"
)

// monthFindings are the detector episodes of monthFleet: the notebooks sit
// idle every afternoon, the backfill job starves the fraud and vision
// tenants on the time-sliced H100 every morning.
func monthFindings(from, to time.Time) []attribution.Finding {
	var fs []attribution.Finding
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		fs = append(fs,
			attribution.Finding{Start: day.Add(10 * time.Hour), End: day.Add(17 * time.Hour), Kind: attribution.FindingIdleAllocation,
				Node: "node-b", GPUUUID: "GPU-l4", Namespace: "notebooks", Pod: "jupyter-" + day.Format("0102"), Container: "nb", Team: "research"},
			attribution.Finding{Start: day.Add(7 * time.Hour), End: day.Add(9 * time.Hour), Kind: attribution.FindingNoisyNeighbour,
				Node: "node-a", GPUUUID: "GPU-h100-ts", Namespace: "batch", Pod: "backfill", Container: "job", Team: "data"},
			attribution.Finding{Start: day.Add(7 * time.Hour), End: day.Add(9 * time.Hour), Kind: attribution.FindingStarved,
				Node: "node-a", GPUUUID: "GPU-h100-ts", Namespace: "fraud", Pod: "score-" + day.Format("0102"), Container: "main", Team: "fraud",
				Detail: "noisy: batch/backfill", NoisyPod: "batch/backfill"},
		)
	}
	fs = append(fs, attribution.Finding{Start: from.Add(3 * time.Hour), End: from.Add(30 * time.Hour), Kind: attribution.FindingIdleAllocation,
		Node: "node-a", GPUUUID: "GPU-a100", Namespace: "search", Pod: "embed-0", Container: "main", Team: "search"})
	return fs
}

// monthReport is March 2026 of monthFleet with its findings.
func monthReport(t testing.TB, policy, idle string) *Report {
	t.Helper()
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	gpus, tenants := monthFleet(from, to, time.UTC)
	src := &memSource{rows: ledgerRows(gpus, tenants, 30*time.Minute), findings: monthFindings(from, to)}
	r := mustBuild(t, src, monthBook(t, "UTC", policy, idle), from, to)
	r.GeneratedAt = time.Date(2026, 4, 1, 6, 0, 0, 0, time.UTC)
	return r
}

func renderHTML(t testing.TB, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestHTMLSelfContained: nothing in the page can fetch anything, and it
// shows the CSV's numbers.
func TestHTMLSelfContained(t *testing.T) {
	r := monthReport(t, "allocation", "shared")
	h := renderHTML(t, r)
	for _, banned := range []string{"<script", "<link", "<img", "<iframe", "src=", "url(", "@import"} {
		if strings.Contains(strings.ToLower(h), banned) {
			t.Errorf("HTML contains %q", banned)
		}
	}
	// Links only within the page (the pills to the policy's explanation).
	for _, m := range regexp.MustCompile(`(?i)href="([^"]*)"`).FindAllStringSubmatch(h, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("HTML links out of the page: href=%q", m[1])
		}
	}
	if !strings.Contains(h, `http-equiv="Content-Security-Policy" content="default-src 'none'`) {
		t.Error("no Content-Security-Policy forbidding fetches")
	}
	for _, want := range []string{"genai", "search", "research", "batch/backfill", "fraud/score-0301", "notebooks/jupyter-0301",
		"search/embed-0", formatMinor(r.Total, 2, true), "idle_share", "March 2026", "Policy allocation"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, tm := range r.Teams {
		if !strings.Contains(h, formatMinor(tm.Total, 2, true)) {
			t.Errorf("HTML lacks team %s total %s", tm.Team, formatMinor(tm.Total, 2, true))
		}
	}
}

// TestHTMLEscapesLabels: labels are text, never markup.
func TestHTMLEscapesLabels(t *testing.T) {
	s := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	base := attribution.Row{IntervalStart: s, IntervalEnd: s.Add(time.Hour), Node: "n", GPUUUID: "G1", GPUModel: "L4", SliceID: "G1", SharingMode: "exclusive"}
	c := kind(base, attribution.KindContainer, 3600, 100)
	c.Team, c.Namespace = `<script>alert("x")</script>`, `"><img src=x onerror=alert(1)>`
	r := mustBuild(t, &memSource{rows: []attribution.Row{c, kind(base, attribution.KindIdle, 0, 3500)}},
		bookFor(t, "USD", "UTC", "allocation", "platform", nil, "1"), s, s.Add(time.Hour))
	h := renderHTML(t, r)
	if strings.Contains(h, "<script>alert") || strings.Contains(h, "<img src=x") {
		t.Error("a label came through as markup")
	}
	if !strings.Contains(h, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Error("the escaped team name is missing")
	}
}

// TestHTMLInChromium opens the page in headless Chromium: it must render
// (a screenshot with many distinct colours), log no console errors and
// show the teams in its DOM. GPULEDGER_REPORT_SCREENSHOT=FILE keeps the
// screenshot and GPULEDGER_REPORT_HTML=FILE the page. (The README's
// docs/report-screenshot.png is the demo's real report instead, made by
// scripts/report-screenshot.sh.)
func TestHTMLInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		testenv.RequireIntegration(t, "chromium not found", "apt-get install chromium")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	r := monthReport(t, "allocation", "shared")
	if err := os.WriteFile(page, []byte(renderHTML(t, r)), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	logs := runChromium(t, chromium, dir, "--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
	for _, bad := range []string{"Uncaught", "ERROR:CONSOLE", "Refused to", "net::ERR_"} {
		if strings.Contains(logs, bad) {
			t.Errorf("chromium logged %q:\n%s", bad, consoleLines(logs))
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, logs)
	}
	img, _, err := image.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot does not decode: %v", err)
	}
	if n := distinctColours(img); n < 50 {
		t.Errorf("screenshot has %d distinct colours: blank or unstyled", n)
	}
	if dst := os.Getenv("GPULEDGER_REPORT_HTML"); dst != "" {
		data, _ := os.ReadFile(page)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if dst := os.Getenv("GPULEDGER_REPORT_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dom := runChromium(t, chromium, dir, "--dump-dom", "file://"+page)
	for _, want := range []string{"genai", "research", "batch/backfill", "Cost per team", "<svg"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
}

func findChromium() string {
	for _, c := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// runChromium runs headless Chromium with no network, no profile and its
// log on stderr; it returns stdout and stderr together.
func runChromium(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

func consoleLines(logs string) string {
	var keep []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "Refused") || strings.Contains(l, "net::") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func distinctColours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}
