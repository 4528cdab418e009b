package groundtruth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// FlagsFile is the optional sidecar next to a scenario.yaml that says which
// findings the pipeline must and must not report; findings depend on the
// detectors' windows and thresholds, so they are stated, not computed.
const FlagsFile = "flags.yaml"

// Flags is the content of a flags.yaml: lists of partial flags.csv rows
// (kind, namespace, pod, container, gpu_uuid, ...).
type Flags struct {
	Expect []map[string]string `yaml:"expect_flags"`
	Forbid []map[string]string `yaml:"forbid_flags"`
}

// LoadFlags reads the flags.yaml in dir; a missing file means no flags.
func LoadFlags(dir string) (Flags, error) {
	if dir == "" {
		return Flags{}, nil
	}
	path := filepath.Join(dir, FlagsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Flags{}, nil
	}
	if err != nil {
		return Flags{}, fmt.Errorf("cannot read %s: %w", path, err)
	}
	var f Flags
	if err := yaml.Unmarshal(b, &f); err != nil {
		return Flags{}, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	for i, m := range f.Expect {
		if m["kind"] == "" {
			return Flags{}, fmt.Errorf("%s: expect_flags[%d]: no kind", path, i)
		}
	}
	return f, nil
}
