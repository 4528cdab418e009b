package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// Every page of gpuledger serve in real Chromium: it renders under the
// page's Content-Security-Policy without a refusal, shows the same money
// as gpuledger report (the month's total, the advice's saving). Their
// layout at a phone's and a laptop's width, their accessibility and the
// screenshots: TestServePagesFitThePhoneAndPassAxe.
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
	for _, p := range []struct {
		path string
		want []string
	}{
		{"/", []string{"Bills by month", "November 2026", grouped(rep.Total.String())}},
		{"/reports/2026-11", []string{"November 2026", grouped(rep.Total.String())}},
		{"/advice/2026-11", []string{"GPU sharing advice", "Kept as they are", adv.Saving.String()}},
		{"/glossary", []string{"share of unused capacity", "capacity released"}},
		{"/reports/2025-01", []string{"no bill for 2025-01"}},
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

// The widths every page of serve is checked at: a phone and a common
// laptop.
const (
	phoneWidth, phoneHeight   = 390, 844
	laptopWidth, laptopHeight = 1366, 768
)

// servePages are serve's pages as a reader meets them.
var servePages = []struct{ name, path string }{
	{"index", "/"},
	{"report", "/reports/2026-11"},
	{"advice", "/advice/2026-11"},
	{"glossary", "/glossary"},
	{"error", "/reports/2025-01"},
	{"explore", "/explore?window=2026-11"},
}

// layoutProbe measures what a reader would have to scroll sideways to
// see: the page wider than the window; a total (every "Total" column,
// and every cell of the months table: each team's total of each month)
// right or left of the window's edge; a box that scrolls sideways
// without the scroll cue (class "scroll": shadows at the edges that hide
// more); a chart's text drawn under 10 px high (about 8 px type: a
// chart scaled down to a phone); and, on a laptop, a header line that
// wraps.
const layoutProbe = `(() => {
  const vw = document.documentElement.clientWidth;
  const out = {vw, page: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth), offscreen: [], uncued: [], tiny: [], wrapped: []};
  const check = (el, what) => {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right > vw + 0.5 || r.left < -0.5) out.offscreen.push(what + ' ' + el.textContent.trim() + ' at ' + Math.round(r.left) + '..' + Math.round(r.right));
  };
  for (const table of document.querySelectorAll('table')) {
    const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent.trim());
    const months = table.closest('#months') !== null;
    for (const tr of table.querySelectorAll('tbody tr, tfoot tr')) {
      [...tr.cells].forEach((td, i) => {
        if ((months || (heads[i] || '').startsWith('Total')) && td.textContent.trim() !== '') check(td, heads[i] || '');
      });
    }
  }
  for (const el of document.querySelectorAll('body *')) {
    const ox = getComputedStyle(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1 && !el.classList.contains('scroll')) {
      out.uncued.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' (' + el.scrollWidth + ' in ' + el.clientWidth + ' px)');
    }
  }
  for (const el of document.querySelectorAll('svg.chart text')) {
    const r = el.getBoundingClientRect();
    if (r.height > 0 && r.height < 10) out.tiny.push(el.textContent.trim() + ' (' + r.height.toFixed(1) + ' px)');
  }
  for (const el of document.querySelectorAll('header .meta > div, nav.site ul.tabs > li')) {
    const lh = parseFloat(getComputedStyle(el).lineHeight) || 20;
    if (el.getBoundingClientRect().height > 1.5 * lh) out.wrapped.push(el.textContent.trim().replace(/\s+/g, ' '));
  }
  return out;
})()`

type layout struct {
	VW        float64  `json:"vw"`
	Page      float64  `json:"page"`
	Offscreen []string `json:"offscreen"`
	Uncued    []string `json:"uncued"`
	Tiny      []string `json:"tiny"`
	Wrapped   []string `json:"wrapped"`
}

type axeViolation struct {
	ID, Impact, Help string
	Nodes            []string
}

// axeRun runs axe-core (injected by the test through the DevTools
// protocol, never served: the pages' policy forbids scripts) on the page.
const axeRun = `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => ({
  id: v.id, impact: v.impact || '', help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))})))`

// Every page of serve, in real Chromium at 390 px and 1366 px: the body
// is never wider than the window, each team's total is on screen, the
// header does not wrap on a laptop, and axe-core finds no serious or
// critical accessibility violation. The screenshots are the docs'
// serve-*.png with GPULEDGER_SCREENSHOTS=$PWD/docs GPULEDGER_SERVE_DAYS=45.
func TestServePagesFitThePhoneAndPassAxe(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		testenv.RequireIntegration(t, "chromium is not installed", "make deps")
	}
	axeJS, err := os.ReadFile(axePath(t))
	if err != nil {
		testenv.RequireIntegration(t, "axe-core is not in the tool cache: "+err.Error(), "make axe")
	}
	db, prices := serveFixture(t)
	hs := startServe(t, db, prices)
	shots := os.Getenv("GPULEDGER_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	for _, p := range servePages {
		for _, size := range []struct {
			suffix string
			w, h   int64
		}{{"-narrow", phoneWidth, phoneHeight}, {"", laptopWidth, laptopHeight}} {
			where := p.path + " at " + map[string]string{"": "1366 px", "-narrow": "390 px"}[size.suffix]
			var opt []chromedp.EmulateViewportOption
			if size.suffix != "" {
				opt = append(opt, chromedp.EmulateMobile, chromedp.EmulateTouch)
			}
			if err := chromedp.Do(bctx, chromedp.EmulateViewport(size.w, size.h, opt...), chromedp.Navigate(hs.URL+p.path)); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			l, err := chromedp.Run(bctx, chromedp.Evaluate[layout](layoutProbe))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if l.Page > l.VW {
				t.Errorf("%s: the page is %.0f px wide in a %.0f px window: it scrolls sideways", where, l.Page, l.VW)
			}
			for _, o := range l.Offscreen {
				t.Errorf("%s: a total is off screen: %s", where, o)
			}
			for _, u := range l.Uncued {
				t.Errorf("%s: %s scrolls sideways without a cue", where, u)
			}
			if len(l.Tiny) > 0 {
				t.Errorf("%s: %d chart labels too small to read, such as %s", where, len(l.Tiny), l.Tiny[0])
			}
			if size.suffix == "" {
				for _, w := range l.Wrapped {
					t.Errorf("%s: the header wraps: %q", where, w)
				}
			}
			png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("%s: screenshot: %v", where, err)
			}
			shot := filepath.Join(shots, "serve-"+p.name+size.suffix+".png")
			if err := os.WriteFile(shot, png, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, n := decodePNG(t, shot); n < 20 {
				t.Errorf("%s: screenshot %s has %d distinct colours: blank or unstyled", where, shot, n)
			}
			if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](string(axeJS))); err != nil {
				t.Fatalf("%s: cannot inject axe-core: %v", where, err)
			}
			vs, err := chromedp.Run(bctx, chromedp.Evaluate[[]axeViolation](axeRun, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatalf("%s: axe-core: %v", where, err)
			}
			for _, v := range vs {
				if v.Impact == "serious" || v.Impact == "critical" {
					t.Errorf("%s: axe %s (%s): %s at %s", where, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "; "))
				} else {
					t.Logf("%s: axe %s (%s): %s at %s", where, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "; "))
				}
			}
		}
	}
}

// axePath is where scripts/deps.sh --axe puts axe-core: the version it
// pins, under $GPULEDGER_TOOLS_DIR, by default gpuledger-tools beside Go's
// build cache.
func axePath(t *testing.T) string {
	t.Helper()
	deps, err := os.ReadFile(filepath.Join("..", "..", "scripts", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^AXE_VERSION=(\S+)$`).FindSubmatch(deps)
	if m == nil {
		t.Fatal("scripts/deps.sh pins no AXE_VERSION")
	}
	root := os.Getenv("GPULEDGER_TOOLS_DIR")
	if root == "" {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err != nil {
			testenv.RequireIntegration(t, "go env GOCACHE failed: "+err.Error(), "set GPULEDGER_TOOLS_DIR")
		}
		root = filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "gpuledger-tools")
	}
	return filepath.Join(root, "axe-core-"+string(m[1]), "axe.min.js")
}
