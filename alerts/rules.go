// Package alerts holds gpuledger's Prometheus alerting and recording rules
// (gpuledger-rules.yaml, the source of truth), the PrometheusRule generated
// from them for the Prometheus operator, and their tests: promtool unit
// tests under tests/, and Go tests that every rule has its annotations,
// runbook and dashboard panel, and references only series the collector
// exports.
package alerts

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RulesFile is the rule file's name in this directory.
const RulesFile = "gpuledger-rules.yaml"

// File is a Prometheus rule file: just what the tests and the generator
// read. promtool check rules validates the rest.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is one rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is an alerting rule (Alert set) or a recording rule (Record set).
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// Name is the alert or record name.
func (r Rule) Name() string {
	if r.Alert != "" {
		return r.Alert
	}
	return r.Record
}

// Parse reads a rule file. Unknown fields, a rule that is neither or both
// an alert and a record, and a rule without an expression are errors that
// name the group and rule.
func Parse(data []byte) (*File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("cannot parse rule file: %w", err)
	}
	if len(f.Groups) == 0 {
		return nil, errors.New("cannot parse rule file: no groups")
	}
	for gi, g := range f.Groups {
		if g.Name == "" {
			return nil, fmt.Errorf("cannot parse rule file: group %d has no name", gi+1)
		}
		for ri, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") {
				return nil, fmt.Errorf("cannot parse rule file: group %s rule %d: needs exactly one of alert and record", g.Name, ri+1)
			}
			if strings.TrimSpace(r.Expr) == "" {
				return nil, fmt.Errorf("cannot parse rule file: group %s rule %s: empty expr", g.Name, r.Name())
			}
		}
	}
	return &f, nil
}

// Alerts lists the alerting rules of a file in order.
func (f *File) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// Records lists the recording rules of a file in order.
func (f *File) Records() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out = append(out, r)
			}
		}
	}
	return out
}
