package advise

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ServiceTimeAnnotation declares the compute time of one request on a
// whole GPU, as a Go duration ("10ms", "2.5ms", "1s").
const ServiceTimeAnnotation = "gpuledger.io/service-time"

// Bounds of a declared service time: below a microsecond or above an
// hour it is a typo, not a request.
const (
	minServiceTime = time.Microsecond
	maxServiceTime = time.Hour
)

// ParseServiceTime reads the annotation's value.
func ParseServiceTime(s string) (time.Duration, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, fmt.Errorf("%s: empty: want a duration such as 10ms", ServiceTimeAnnotation)
	}
	if len(v) > 32 {
		return 0, fmt.Errorf("%s: %q is too long for a duration", ServiceTimeAnnotation, v[:32]+"...")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration such as 10ms", ServiceTimeAnnotation, v)
	}
	if d < minServiceTime || d > maxServiceTime {
		return 0, fmt.Errorf("%s: %s is outside %s to %s", ServiceTimeAnnotation, d, minServiceTime, maxServiceTime)
	}
	return d, nil
}

// Pod is what the advisor may know of a pod beyond the ledger (from the
// Kubernetes API or `kubectl get pods -o json`).
type Pod struct {
	Namespace, Name string
	// Owner is the owning controller ("Deployment/web", "StatefulSet/db",
	// "Job/train"), empty when unknown.
	Owner       string
	Annotations map[string]string
}

// Owner resolution without pod metadata: the name a controller gives its
// pods, minus the suffix it adds. Kubernetes draws generated suffixes and
// pod-template hashes from an alphabet without vowels or 0, 1, 3 (so they
// never spell words): "llm-serve" keeps its "-serve".
const safe = `[bcdfghjklmnpqrstvwxz2456789]`

var (
	// Deployment -> ReplicaSet -> pod: <deploy>-<template hash>-<5 chars>.
	replicaSetPod = regexp.MustCompile(`^(.+)-` + safe + `{6,10}-` + safe + `{5}$`)
	// StatefulSet: <name>-<ordinal>.
	statefulSetPod = regexp.MustCompile(`^(.+)-[0-9]+$`)
	// Job, DaemonSet, bare ReplicaSet: <name>-<5 chars>.
	generatedPod = regexp.MustCompile(`^(.+)-` + safe + `{5}$`)
	// Deployment's ReplicaSet name: <deploy>-<template hash>.
	replicaSetName = regexp.MustCompile(`^(.+)-` + safe + `{6,10}$`)
)

// WorkloadName names the workload a pod belongs to: its owning
// controller when known (a ReplicaSet is named after its Deployment),
// else the pod name minus a controller's suffix (a heuristic: it can
// merge a pod that merely looks generated with its namesakes), else the
// pod.
func WorkloadName(pod string, meta *Pod) string {
	if meta != nil && meta.Owner != "" {
		kind, name, _ := strings.Cut(meta.Owner, "/")
		if kind == "ReplicaSet" {
			if m := replicaSetName.FindStringSubmatch(name); m != nil {
				return m[1]
			}
		}
		return name
	}
	for _, re := range []*regexp.Regexp{replicaSetPod, statefulSetPod, generatedPod} {
		if m := re.FindStringSubmatch(pod); m != nil {
			return m[1]
		}
	}
	return pod
}
