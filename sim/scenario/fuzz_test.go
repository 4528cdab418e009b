package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxInlineRows keeps fuzz seeds small: the first rows of a valid trace are
// themselves a valid, lighter trace.
const maxInlineRows = 6

var busyTraceLine = regexp.MustCompile(`(?m)^(\s*)busyTrace: (\S+)$`)

// inlineTraces rewrites an example's busyTrace lines into inline busy lists
// so that the fuzz seed parses without files.
func inlineTraces(t testing.TB, dir string, yaml string) string {
	return busyTraceLine.ReplaceAllStringFunc(yaml, func(line string) string {
		m := busyTraceLine.FindStringSubmatch(line)
		data, err := os.ReadFile(filepath.Join(dir, m[2]))
		if err != nil {
			t.Fatalf("cannot read trace: %v", err)
		}
		rows := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
		var segs []string
		for i, r := range rows {
			f := strings.Split(r, ",")
			if i >= maxInlineRows || len(f) != 3 {
				break
			}
			segs = append(segs, fmt.Sprintf("{from: %s, to: %s, fraction: %s}", f[0], f[1], f[2]))
		}
		return m[1] + "busy: [" + strings.Join(segs, ", ") + "]"
	})
}

func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(examplesDir, "*", "scenario.yaml"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seed := inlineTraces(f, filepath.Dir(p), string(data))
		if _, err := Parse([]byte(seed), ""); err != nil {
			f.Fatalf("seed from %s does not parse: %v", p, err)
		}
		f.Add([]byte(seed))
	}
	shapes := shapesYAML(f)
	f.Add([]byte(shapes))
	// Variants around the new fields' edges: a plain init container
	// without end, one ending with the pod, a GI and a minor clash.
	f.Add([]byte(strings.Replace(shapes, "        end: 1m\n", "", 1)))
	f.Add([]byte(strings.Replace(shapes, "        end: 1m\n", "        end: 9m\n", 1)))
	f.Add([]byte(strings.Replace(shapes, "gi: 0", "gi: 7", 1)))
	f.Add([]byte(strings.Replace(shapes, "minor: 0", "minor: 2", 1)))
	// resource.k8s.io's typed attribute values, valid and not.
	typed := strings.Replace(shapes, plainAttributes, typedAttributes, 1)
	f.Add([]byte(typed))
	f.Add([]byte(strings.Replace(typed, "{int: 0}", "{int: 0, bool: true}", 1)))
	f.Add([]byte(strings.Replace(typed, "{bool: false}", "{float: 1.5}", 1)))
	f.Add([]byte(baseYAML))
	f.Add([]byte(limitsScenario("        limits: {nvidia.com/gpucores: 30, nvidia.com/gpumem: 1000}\n")))
	f.Add([]byte(strings.Replace(baseYAML, "fraction: 0}]", "fraction: 0.5}]", 1)))
	f.Add([]byte(strings.Replace(baseYAML, "mode: timeslicing", "mode: mps", 1)))
	f.Add([]byte(strings.Replace(baseYAML, "pid: 10002", "pid: 10001", 1)))
	f.Add([]byte(strings.Replace(baseYAML, "duration: 10m", "duration: -1", 1)))
	// Memory over time: valid, touching intervals, overlapping, a full
	// device, a trace that never resolves.
	mem := "            memoryMiB: 2048\n"
	f.Add([]byte(strings.Replace(baseYAML, mem, mem+"            memory: [{from: 0s, to: 1m, mib: 4096}, {from: 1m, to: 2m, mib: 0}]\n", 1)))
	f.Add([]byte(strings.Replace(baseYAML, mem, mem+"            memory: [{from: 0s, to: 2m, mib: 4096}, {from: 1m, to: 3m, mib: 1}]\n", 1)))
	f.Add([]byte(strings.Replace(baseYAML, mem, mem+"            memory: [{from: 1m, to: 2m, mib: 80700}]\n", 1)))
	f.Add([]byte(strings.Replace(baseYAML, mem, mem+"            memoryTrace: traces/m.csv\n", 1)))
	// The hostile intervals, dates, names and counts (the small ones:
	// large seeds slow every mutation).
	for _, tc := range hostileCases {
		if y := editText(f, baseYAML, tc.edits...); len(y) < 64<<10 {
			f.Add([]byte(y))
		}
	}
	f.Add([]byte("apiVersion: gpuledger/v1\nkind: Scenario\n"))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("{{{"))
	f.Add([]byte(""))
	dir := f.TempDir() // empty: busyTrace paths in inputs never resolve
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, dir)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		checkInvariants(t, s)
	})
}
