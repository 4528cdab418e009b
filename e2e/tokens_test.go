package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
