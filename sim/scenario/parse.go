package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Load reads a scenario file, loads its busy traces (relative to the file's
// directory) and validates it.
func Load(path string) (*Scenario, error) {
	data, err := readCapped(path, "scenario", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("invalid scenario %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a scenario from YAML. dir is where busyTrace paths are
// resolved from ("" means the working directory).
func Parse(data []byte, dir string) (*Scenario, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("scenario of %d bytes is larger than %d (16 MiB): put long busy lists in busyTrace files", len(data), MaxFileBytes)
	}
	var f File
	if err := decode(data, &f); err != nil {
		return nil, err
	}
	c := converter{dir: dir}
	s := c.scenario(&f)
	if err := c.p.err(); err != nil {
		return nil, err
	}
	if err := validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

// decode reads exactly one YAML document into f, rejecting unknown fields
// so that a misspelt key is an error instead of a silently ignored default.
func decode(data []byte, f *File) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(f)
	if errors.Is(err, io.EOF) {
		return errors.New("empty scenario: no YAML document")
	}
	if err != nil {
		return explainYAML(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("cannot parse YAML after the first document: %w", err)
		}
		return fmt.Errorf("line %d: a scenario file holds one YAML document, found another", extra.Line)
	}
	dropNulls(f)
	return nil
}

// readCapped reads at most limit bytes of a regular file, and fails
// naming the file when it holds more: the whole file is never read.
func readCapped(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s is larger than %d bytes (%d MiB): refused", what, path, limit, limit>>20)
	}
	return data, nil
}
