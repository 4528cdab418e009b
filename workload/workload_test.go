package workload

import (
	"strings"
	"testing"
)

// TestFromPod: each controller's pod names, as Kubernetes writes them,
// name their workload; the owner, where known, names the same one.
func TestFromPod(t *testing.T) {
	for _, c := range []struct {
		pod, ownerKind, ownerName, want string
	}{
		{"web-7d9f8b6c5d-x7k2p", "ReplicaSet", "web-7d9f8b6c5d", "web"},                 // Deployment
		{"llm-serve-5c6b7d8f9-bcdfg", "ReplicaSet", "llm-serve-5c6b7d8f9", "llm-serve"}, // Deployment, 9-char hash
		{"db-0", "StatefulSet", "db", "db"},                                             // StatefulSet
		{"trainer-12", "StatefulSet", "trainer", "trainer"},                             // StatefulSet
		{"etl-x7k2p", "Job", "etl", "etl"},                                              // Job
		{"train-28391230-x7k2p", "Job", "train-28391230", "train"},                      // CronJob's Job
		{"backup-28934160-kz7qw", "Job", "backup-28934160", "backup"},                   // CronJob's Job
		{"agent-x7k2p", "DaemonSet", "agent", "agent"},                                  // DaemonSet
		{"node-exporter-8zq5x", "DaemonSet", "node-exporter", "node-exporter"},          // DaemonSet
		{"cache-b2c4d", "ReplicaSet", "cache", "cache"},                                 // bare ReplicaSet
		// Hand-named pods stay whole.
		{"jupyter", "", "", "jupyter"},
		{"notebook-alice", "", "", "notebook-alice"},
		{"llm-serve", "", "", "llm-serve"}, // "serve" has a vowel: not generated
		{"llama-70b-inference", "", "", "llama-70b-inference"},
		{"-x7k2p", "", "", "-x7k2p"},
		{"", "", "", ""},
	} {
		if got := FromPod(c.pod); got != c.want {
			t.Errorf("FromPod(%q) = %q, want %q", c.pod, got, c.want)
		}
		if c.ownerKind != "" {
			if got := FromOwner(c.ownerKind, c.ownerName); got != c.want {
				t.Errorf("FromOwner(%s, %q) = %q, want %q", c.ownerKind, c.ownerName, got, c.want)
			}
		}
	}
	// An owner that is not a generated name is the workload.
	for _, c := range [][3]string{{"Job", "nightly", "nightly"}, {"ReplicaSet", "web", "web"}, {"StatefulSet", "db-2", "db-2"}, {"Job", "-12", "-12"}} {
		if got := FromOwner(c[0], c[1]); got != c[2] {
			t.Errorf("FromOwner(%s, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// FuzzFromPod: pod names are the tenants'. Any name gives a prefix of
// itself, non-empty for a non-empty name; so does any owner.
func FuzzFromPod(f *testing.F) {
	for _, s := range []string{"web-7d4b9c8f6d-x2q4z", "db-0", "-", "a-bcdfg", "", "train-28391230-x7k2p", "--bcdfg"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := FromPod(s)
		if !strings.HasPrefix(s, w) || (s != "" && w == "") {
			t.Fatalf("FromPod(%q) = %q", s, w)
		}
		for _, kind := range []string{"ReplicaSet", "Job", "StatefulSet"} {
			if o := FromOwner(kind, s); !strings.HasPrefix(s, o) || (s != "" && o == "") {
				t.Fatalf("FromOwner(%s, %q) = %q", kind, s, o)
			}
		}
	})
}
