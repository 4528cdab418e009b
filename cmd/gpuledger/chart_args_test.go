package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestChartCollectorArgsParse: the DaemonSet the chart renders by default
// (deploy/gpuledger.yaml, kept current by make manifests' stale test)
// runs `collect` with arguments this binary's flags accept, so a renamed
// flag or a template typo fails here, not on a node.
func TestChartCollectorArgsParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "gpuledger.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var args []string
	for {
		var obj struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name string   `yaml:"name"`
							Args []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&obj); err != nil {
			break
		}
		if obj.Kind == "DaemonSet" {
			for _, c := range obj.Spec.Template.Spec.Containers {
				if c.Name == "collector" {
					args = c.Args
				}
			}
		}
	}
	if len(args) < 2 || args[0] != "collect" {
		t.Fatalf("collector args %q, want collect and its flags", args)
	}
	f, err := parseCollectFlags(append(slices.Clone(args[1:]), "--node", "gpu-node-1"))
	if err != nil {
		t.Fatalf("the chart's collector args %q: %v", args[1:], err)
	}
	if f.retention != 0 || f.outboxMaxBytes != 1<<30 {
		t.Errorf("chart defaults: retention %v, outbox bound %d; want 0 and 1 GiB", f.retention, f.outboxMaxBytes)
	}
}
