package advicereport

import "testing"

// The pods file is kubectl's List of Pods: names, annotations and the
// controlling owner come through; a pod without a namespace or another
// kind of object is refused.
func TestParsePods(t *testing.T) {
	if _, err := ParsePods("p.json", []byte(`{"kind":"List","items":[{"metadata":{"name":"a"}}]}`)); err == nil {
		t.Error("pod without namespace accepted")
	}
	if _, err := ParsePods("p.json", []byte(`{"kind":"Deployment"}`)); err == nil {
		t.Error("a Deployment accepted as pods")
	}
	pods, err := ParsePods("p.json", []byte(`{"kind":"List","items":[{"metadata":{"name":"web-7d4b9c8f6d-x2q4z","namespace":"s",
		"annotations":{"gpuledger.io/service-time":"10ms"},"ownerReferences":[{"kind":"ReplicaSet","name":"web-7d4b9c8f6d","controller":true}]}}]}`))
	if err != nil || len(pods) != 1 || pods[0].Owner != "ReplicaSet/web-7d4b9c8f6d" || pods[0].Annotations["gpuledger.io/service-time"] != "10ms" {
		t.Errorf("pods %+v, %v", pods, err)
	}
	pods, err = ParsePods("p.json", []byte(`{"kind":"PodList","items":[{"metadata":{"name":"j-x","namespace":"s","ownerReferences":[
		{"kind":"Node","name":"n1"},{"kind":"Job","name":"j","controller":true}]}}]}`))
	if err != nil || len(pods) != 1 || pods[0].Owner != "Job/j" {
		t.Errorf("pods %+v, %v: want the controller, not the first owner", pods, err)
	}
}

// FuzzParsePods: the pods file comes from outside. Any bytes give pods
// with a name and a namespace, or an error; never a panic.
func FuzzParsePods(f *testing.F) {
	f.Add([]byte(`{"kind":"List","items":[{"metadata":{"name":"a","namespace":"b","annotations":{"gpuledger.io/service-time":"10ms"},"ownerReferences":[{"kind":"ReplicaSet","name":"a-7d4b9c8f6d","controller":true}]}}]}`))
	f.Add([]byte(`{"items":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"kind":"Pod"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := ParsePods("fuzz.json", data)
		if err != nil {
			return
		}
		for _, p := range pods {
			if p.Name == "" || p.Namespace == "" {
				t.Fatalf("pod without name or namespace accepted: %+v", p)
			}
		}
	})
}
