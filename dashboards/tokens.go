package dashboards

import "strings"

// The inference servers' token counters (docs/tokens.md cites where each
// name is defined): vLLM, SGLang, Hugging Face TGI (its per-request
// histograms' sums), Triton's TensorRT-LLM backend (its histograms' sums,
// model label "model" copied to model_name) and NVIDIA NIM for LLMs, in
// the order a pod exporting
// several is counted by ("or" keeps the first).
var (
	promptTokenMetrics     = []string{"vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "tgi_request_input_length_sum", "nv_llm_input_token_len_sum", "prompt_tokens_total"}
	generationTokenMetrics = []string{"vllm:generation_tokens_total", "sglang:generation_tokens_total", "tgi_request_generated_tokens_sum", "nv_llm_output_token_len_sum", "generation_tokens_total"}
)

// tokenFilter selects the servers' series: they carry their pod's
// namespace (from service discovery), no node or team.
const tokenFilter = `cluster=~"$cluster", namespace=~"$namespace"`

// byPodModel identifies one pod's served model (model_name; empty for TGI).
const byPodModel = "cluster, namespace, pod, model_name"

// tokensOverRange is the tokens each pod counted per model over the time
// range, from the first server whose names it exports.
func tokensOverRange(metrics []string) string {
	parts := make([]string, len(metrics))
	for i, m := range metrics {
		parts[i] = increase(sel(m, tokenFilter))
		if strings.HasPrefix(m, "nv_llm_") {
			parts[i] = `label_join(` + parts[i] + `, "model_name", "", "model")`
		}
	}
	return sumBy(byPodModel, strings.Join(parts, " or "))
}

// podCostOverRange is each pod's cost over the time range in the price
// book's currency: allocated GPU-hours at its GPUs' model rate.
func podCostOverRange() string {
	perGPU := hours(sumBy(byGPU+", namespace, pod", increase(sel(mAllocated, ctrFilter))))
	return sumBy("cluster, namespace, pod, currency", priced(sumBy("cluster, namespace, pod, model", gpuModel(perGPU))))
}

// costPerMillionTokens is the cost per million tokens (prompt or
// generated, metrics) per namespace and model over the time range: each
// pod's cost split among its models by their share of its tokens, summed,
// over the tokens, times a million. Pods without tokens have no figure.
func costPerMillionTokens(metrics []string) string {
	all := "(" + tokensOverRange(promptTokenMetrics) + " + " + tokensOverRange(generationTokenMetrics) + ")"
	share := all + " / on (cluster, namespace, pod) group_left () (" + sumBy("cluster, namespace, pod", all) + " > 0)"
	modelCost := "(" + share + ") * on (cluster, namespace, pod) group_left (currency) (" + podCostOverRange() + ")"
	return sumBy("cluster, namespace, model_name, currency", modelCost) + " * 1e6 / on (cluster, namespace, model_name) group_left () (" +
		sumBy("cluster, namespace, model_name", tokensOverRange(metrics)) + " > 0)"
}
