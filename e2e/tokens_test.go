package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuledger/gpuledger/quota"
	"github.com/gpuledger/gpuledger/quota/kubequota"
)

// serveTokens serves a vLLM server's token counters for the busy tenant
// (a pod that holds a whole GPU all run), growing with wall time, so the
// chargeback's cost per token panel has a pod to join. The labels are in
// the exposition because the test scrapes every target with honor_labels
// (a real server gets namespace and pod from service discovery).
func serveTokens(t *testing.T) string {
	t.Helper()
	ns, pod, _ := strings.Cut(busyTenant, "/")
	began := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := int64(time.Since(began) / time.Second)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"llama\",engine=\"0\",namespace=%q,pod=%q} %d\n"+
			"# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"llama\",engine=\"0\",namespace=%q,pod=%q} %d\n",
			ns, pod, 1000*s, ns, pod, 200*s)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// serveQuota serves the quota gauges gpuledger serve --quota exports,
// through the same collector (quota/kubequota), for the busy tenant's
// team: the chargeback's quota panel and the quota rules read them beside
// what the simulated nodes' containers hold.
func serveQuota(t *testing.T) string {
	t.Helper()
	// exclusive-basic's namespace ml is team training-platform's.
	reg := prometheus.NewRegistry()
	reg.MustRegister(kubequota.NewCollector(func() []quota.Entry {
		return []quota.Entry{{Key: quota.Key{Source: quota.SourceKueue, Object: "cq-ml", Resource: quota.ResourceAnyGPU},
			Team: "training-platform", Milli: 2000, LimitMilli: 3000}}
	}))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
