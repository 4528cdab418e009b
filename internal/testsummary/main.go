// Command testsummary runs `go test -json` with the arguments it is given,
// prints what plain `go test` would (each package's closing line, and the
// output of every failing test), and ends with one block that names every
// integration test that was skipped and how to bring what it lacked. It
// exits with go test's status.
//
// The tests skip through internal/testenv.RequireIntegration, whose skip
// message is "skipping: WHAT (HOW)"; any other skip is a test's own
// choice and is not listed.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

func main() {
	args := append([]string{"test", "-json"}, os.Args[1:]...)
	cmd := exec.Command(goTool(), args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary: cannot run go test:", err)
		os.Exit(2)
	}
	skips, rerr := summarise(stdout, os.Stdout)
	werr := cmd.Wait()
	writeSkips(os.Stdout, skips)
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", rerr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		os.Exit(exit.ExitCode())
	case werr != nil || rerr != nil:
		os.Exit(2)
	}
}

// goTool is the go command: $GO when set (as the Makefile passes it).
func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// Skip is an integration test that did not run, what it lacked and how to
// bring it.
type Skip struct {
	Package, Test, What, How string
}

// skipLine is RequireIntegration's message, as go test prints a t.Skipf:
// "    file_test.go:12: skipping: WHAT (HOW)".
var skipLine = regexp.MustCompile(`^\s+\S+:\d+: skipping: (.*) \(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*$`)

// maxBuffered bounds the output kept for one running test: a test that
// prints without end still shows its last lines if it fails.
const maxBuffered = 2000

// summarise reads go test -json events from r and writes plain go test
// output to w: package lines as they come, a failing test's own output
// when it fails. It returns the integration skips.
func summarise(r io.Reader, w io.Writer) ([]Skip, error) {
	type key struct{ pkg, test string }
	buf := map[key][]string{}
	var skips []Skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (a build error printed as text): pass it on.
			fmt.Fprintln(w, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			// A package that does not build: go test prints why.
			io.WriteString(w, e.Output)
		case "output":
			if e.Test == "" {
				if !isVerboseNoise(e.Output) {
					io.WriteString(w, e.Output)
				}
				continue
			}
			if !strings.HasPrefix(e.Output, "=== ") {
				b := append(buf[k], e.Output)
				if len(b) > maxBuffered {
					b = b[len(b)-maxBuffered:]
				}
				buf[k] = b
			}
		case "fail":
			if e.Test == "" {
				// The package failed: tests that never finished (a
				// crash, a timeout) show what they printed.
				var open []key
				for bk := range buf {
					if bk.pkg == e.Package && bk.test != "" {
						open = append(open, bk)
					}
				}
				sort.Slice(open, func(i, j int) bool { return open[i].test < open[j].test })
				for _, bk := range open {
					for _, o := range buf[bk] {
						io.WriteString(w, o)
					}
					delete(buf, bk)
				}
			}
			if e.Test != "" {
				// -json streams a test's log before its "--- FAIL" line;
				// plain go test prints that line first.
				for _, first := range []bool{true, false} {
					for _, o := range buf[k] {
						if strings.HasPrefix(strings.TrimLeft(o, " "), "--- FAIL") == first {
							io.WriteString(w, o)
						}
					}
				}
			}
			delete(buf, k)
		case "skip":
			for _, o := range buf[k] {
				if m := skipLine.FindStringSubmatch(strings.TrimRight(o, "\n")); m != nil && e.Test != "" {
					skips = append(skips, Skip{Package: e.Package, Test: e.Test, What: m[1], How: m[2]})
				}
			}
			delete(buf, k)
		case "pass":
			delete(buf, k)
		}
	}
	return skips, sc.Err()
}

// isVerboseNoise: package-level lines -json adds that plain go test does
// not print ("PASS" before "ok", "=== RUN" of examples).
func isVerboseNoise(s string) bool {
	return s == "PASS\n" || strings.HasPrefix(s, "=== ")
}

// writeSkips ends the run with the integration tests that did not run.
func writeSkips(w io.Writer, skips []Skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "\nintegration tests skipped: none")
		return
	}
	sort.Slice(skips, func(i, j int) bool {
		if skips[i].Package != skips[j].Package {
			return skips[i].Package < skips[j].Package
		}
		return skips[i].Test < skips[j].Test
	})
	fmt.Fprintf(w, "\nintegration tests skipped: %d (what they lacked; GPULEDGER_REQUIRE_INTEGRATION=1 makes these failures)\n", len(skips))
	hows := map[string]bool{}
	for _, s := range skips {
		fmt.Fprintf(w, "  SKIP %s %s: %s\n", s.Package, s.Test, s.What)
		hows[s.How] = true
	}
	fmt.Fprintln(w, "to bring what they lacked:")
	var list []string
	for h := range hows {
		list = append(list, h)
	}
	sort.Strings(list)
	for _, h := range list {
		fmt.Fprintf(w, "  %s\n", h)
	}
}
