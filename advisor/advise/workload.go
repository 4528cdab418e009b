package advise

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuledger/gpuledger/workload"
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

// WorkloadName names the workload a pod belongs to: its owning
// controller when known (a Deployment's ReplicaSet and a CronJob's Job are
// named after the Deployment and the CronJob), else the pod name minus a
// controller's suffix (package workload, the one heuristic the FOCUS
// export uses too), else the pod.
func WorkloadName(pod string, meta *Pod) string {
	if meta != nil && meta.Owner != "" {
		kind, name, _ := strings.Cut(meta.Owner, "/")
		return workload.FromOwner(kind, name)
	}
	return workload.FromPod(pod)
}
