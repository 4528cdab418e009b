// Package tokencost gives inference workloads their cost per million
// input and output tokens: the ledger's exact GPU cost of each pod over a
// period divided by the tokens its inference server counted in the same
// period, read from Prometheus (docs/tokens.md).
package tokencost

// Server is one inference server's token counters as it names them on
// /metrics. The names come from each project's source (docs/tokens.md
// cites the files).
type Server struct {
	Name string
	// Input and Output are counters (or a histogram's _sum) of prompt and
	// generated tokens.
	Input, Output string
	// ModelLabel is the label naming the served model; empty where the
	// server serves one model and does not label it.
	ModelLabel string
}

// Servers are the inference servers whose token counters are read, in
// the order they are tried for a pod that exports several (the first
// wins, so a server that also exports another's names is not counted
// twice).
var Servers = []Server{
	{Name: "vllm", Input: "vllm:prompt_tokens_total", Output: "vllm:generation_tokens_total", ModelLabel: "model_name"},
	{Name: "sglang", Input: "sglang:prompt_tokens_total", Output: "sglang:generation_tokens_total", ModelLabel: "model_name"},
	// TGI records per-request histograms; their _sum is the token total.
	{Name: "tgi", Input: "tgi_request_input_length_sum", Output: "tgi_request_generated_tokens_sum"},
	// Triton's TensorRT-LLM backend records per-request histograms of
	// input and output tokens (Triton itself counts no tokens); labelled
	// with Triton's model name.
	{Name: "triton-trtllm", Input: "nv_llm_input_token_len_sum", Output: "nv_llm_output_token_len_sum", ModelLabel: "model"},
	// NVIDIA NIM for LLMs exports vLLM's counters without the prefix.
	{Name: "nim", Input: "prompt_tokens_total", Output: "generation_tokens_total", ModelLabel: "model_name"},
}

// MetricNames lists every token series the servers export, for checks
// that a query reads only known series.
func MetricNames() []string {
	var out []string
	for _, s := range Servers {
		out = append(out, s.Input, s.Output)
	}
	return out
}
