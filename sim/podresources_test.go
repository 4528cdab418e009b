package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

func TestPodResourcesOverGRPC(t *testing.T) {
	sc := baseScenario(scenario.ModeTimeslicing, 20*time.Second)
	addPod(sc, "uid-a", "a", 0, 10*time.Second)
	addPod(sc, "uid-b", "b", 5*time.Second, 20*time.Second)
	sc.Pods[1].Containers[0].Devices = []scenario.DeviceRequest{{Resource: "nvidia.com/gpu", IDs: []string{gpu0 + "::1", gpu0 + "::2"}}}
	n := newNode(t, sc)

	conn, err := grpc.NewClient("unix://"+n.PodResourcesSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer conn.Close()
	client := podresourcesv1.NewPodResourcesListerClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	list := func() []string {
		t.Helper()
		resp, err := client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		var names []string
		for _, p := range resp.GetPodResources() {
			names = append(names, p.GetName())
		}
		return names
	}
	steps := []struct {
		at   time.Duration
		want []string
	}{
		{0, []string{"a"}},
		{5 * time.Second, []string{"a", "b"}},
		{10 * time.Second, []string{"a", "b"}}, // both ends inclusive
		{10500 * ms, []string{"b"}},
		{20 * time.Second, []string{"b"}},
		{21 * time.Second, nil},
	}
	for _, s := range steps {
		advance(t, n, s.at)
		if got := list(); !slices.Equal(got, s.want) {
			t.Errorf("at %v: pods %v, want %v", s.at, got, s.want)
		}
		if s.at == 10500*ms {
			resp, err := client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "b", PodNamespace: "team-a"})
			if err != nil {
				t.Fatalf("Get b: %v", err)
			}
			c := resp.GetPodResources().GetContainers()
			if len(c) != 1 || c[0].GetName() != "main" || len(c[0].GetDevices()) != 1 ||
				c[0].GetDevices()[0].GetResourceName() != "nvidia.com/gpu" ||
				!slices.Equal(c[0].GetDevices()[0].GetDeviceIds(), []string{gpu0 + "::1", gpu0 + "::2"}) {
				t.Errorf("Get b: %+v", resp.GetPodResources())
			}
			_, err = client.Get(ctx, &podresourcesv1.GetPodResourcesRequest{PodName: "a", PodNamespace: "team-a"})
			if status.Code(err) != codes.NotFound {
				t.Errorf("Get a after its end: %v, want NotFound", err)
			}
		}
	}
	alloc, err := client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatalf("GetAllocatableResources: %v", err)
	}
	if d := alloc.GetDevices(); len(d) != 1 || !slices.Equal(d[0].GetDeviceIds(), []string{gpu0 + "::0", gpu0 + "::1", gpu0 + "::2"}) {
		t.Errorf("allocatable %+v", d)
	}
}
