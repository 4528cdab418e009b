package procfs

import (
	"regexp"
	"strings"
	"testing"
)

// Fixtures. The UID appears in its Kubernetes form, in the underscore form
// systemd slice names carry, and as the 32-hex UID of a static pod.
const (
	uid       = "0b5c6d2e-1a2b-4c3d-8e4f-0123456789ab"
	uidSlice  = "0b5c6d2e_1a2b_4c3d_8e4f_0123456789ab"
	staticUID = "6e3b0f8a9c4d2e1f0a7b5c3d9e8f1a2b"
	ctrA      = "3f9a1c0d2b4e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"
	ctrB      = "b1e2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
)

// v1Lines builds a cgroup v1 file whose every controller shows path, the
// way kubelet places a container in all hierarchies.
func v1Lines(path string) string {
	ctrls := []string{
		"12:hugetlb", "11:pids", "10:net_cls,net_prio", "9:perf_event",
		"8:cpuset", "7:freezer", "6:blkio", "5:devices", "4:rdma",
		"3:memory", "2:cpu,cpuacct", "1:name=systemd",
	}
	var b strings.Builder
	for _, c := range ctrls {
		b.WriteString(c + ":" + path + "\n")
	}
	return b.String()
}

func TestParseCgroup(t *testing.T) {
	tests := []struct {
		name    string
		content string
		uid, id string
		ok      bool
	}{
		// cgroup v2, systemd driver (kubeadm on Ubuntu 22.04+, EKS AL2023,
		// AKS Ubuntu 22.04): what the simulator writes too.
		{"v2 systemd containerd burstable",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n",
			uid, ctrA, true},
		{"v2 systemd containerd besteffort",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidSlice + ".slice/cri-containerd-" + ctrB + ".scope\n",
			uid, ctrB, true},
		{"v2 systemd containerd guaranteed has no QoS slice",
			"0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n",
			uid, ctrA, true},
		{"no trailing newline",
			"0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope",
			uid, ctrA, true},
		// OpenShift 4 / CRI-O.
		{"v2 systemd cri-o",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/crio-" + ctrB + ".scope\n",
			uid, ctrB, true},
		{"cri-o with crun's container sub-cgroup",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/crio-" + ctrB + ".scope/container\n",
			uid, ctrB, true},
		{"cri-o conmon is in the pod but not the container",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/crio-conmon-" + ctrB + ".scope\n",
			uid, "", true},
		{"v1 systemd cri-o (OpenShift 4 before cgroup v2)",
			v1Lines("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidSlice + ".slice/crio-" + ctrA + ".scope"),
			uid, ctrA, true},
		// Docker through dockershim / cri-dockerd.
		{"v1 systemd docker",
			v1Lines("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/docker-" + ctrA + ".scope"),
			uid, ctrA, true},
		{"v2 systemd cri-dockerd",
			"0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/docker-" + ctrB + ".scope\n",
			uid, ctrB, true},
		// cgroupfs driver (GKE COS, EKS AL2).
		{"v1 cgroupfs containerd burstable",
			v1Lines("/kubepods/burstable/pod" + uid + "/" + ctrA),
			uid, ctrA, true},
		{"v1 cgroupfs docker guaranteed",
			v1Lines("/kubepods/pod" + uid + "/" + ctrB),
			uid, ctrB, true},
		{"v1 hybrid: unified line at the root, controllers name the pod",
			"0::/\n" + v1Lines("/kubepods/besteffort/pod"+uid+"/"+ctrA),
			uid, ctrA, true},
		{"v1 a controller left at the pod, another names the container",
			"3:memory:/kubepods/burstable/pod" + uid + "\n2:cpu,cpuacct:/kubepods/burstable/pod" + uid + "/" + ctrB + "\n",
			uid, ctrB, true},
		{"v2 cgroupfs containerd (GKE cgroup v2)",
			"0::/kubepods/burstable/pod" + uid + "/" + ctrA + "\n",
			uid, ctrA, true},
		{"v2 cgroupfs cri-o",
			"0::/kubepods/besteffort/pod" + uid + "/crio-" + ctrB + "\n",
			uid, ctrB, true},
		{"cgroupfs cri-o conmon",
			"0::/kubepods/besteffort/pod" + uid + "/crio-conmon-" + ctrB + "\n",
			uid, "", true},
		// Seen from a private cgroup namespace (the collector's own pod).
		{"cgroup namespace, sibling QoS class",
			"0::/../../kubepods-burstable-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n",
			uid, ctrA, true},
		{"cgroup namespace, other QoS class",
			"0::/../../../kubepods-besteffort.slice/kubepods-besteffort-pod" + uidSlice + ".slice/cri-containerd-" + ctrB + ".scope\n",
			uid, ctrB, true},
		{"cgroup namespace, cgroupfs",
			"0::/../pod" + uid + "/" + ctrA + "\n",
			uid, ctrA, true},
		{"cgroup namespace, own container", "0::/\n", "", "", false},
		// kind: kubelet's cgroup root /kubelet inside a node container.
		{"kind nested in docker",
			"0::/system.slice/docker-" + ctrB + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n",
			uid, ctrA, true},
		// containerd without SystemdCgroup while kubelet uses systemd.
		{"literal systemd cgroupsPath below containerd.service",
			"0::/system.slice/containerd.service/kubepods-burstable-pod" + uidSlice + ".slice:cri-containerd:" + ctrA + "\n",
			uid, ctrA, true},
		{"static pod with a 32-hex UID",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + staticUID + ".slice/cri-containerd-" + ctrA + ".scope\n",
			staticUID, ctrA, true},
		{"static pod cgroupfs",
			"0::/kubepods/burstable/pod" + staticUID + "/" + ctrB + "\n",
			staticUID, ctrB, true},
		{"process in the pod cgroup itself",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidSlice + ".slice\n",
			uid, "", true},
		{"systemd inside the container",
			"0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope/init.scope\n",
			uid, ctrA, true},
		{"unknown runtime below the pod",
			"0::/kubepods/burstable/pod" + uid + "/sandbox\n",
			uid, "", true},
		// Host processes.
		{"empty file", "", "", "", false},
		{"mps daemon service", "0::/system.slice/nvidia-mps.service\n", "", "", false},
		{"user session", "0::/user.slice/user-1000.slice/session-3.scope\n", "", "", false},
		{"plain docker v2", "0::/system.slice/docker-" + ctrA + ".scope\n", "", "", false},
		{"plain docker v1", v1Lines("/docker/" + ctrA), "", "", false},
		{"kubelet's QoS slice", "0::/kubepods.slice/kubepods-burstable.slice\n", "", "", false},
		{"podman is not a pod", "0::/system.slice/podman.service\n", "", "", false},
		{"v1 init", v1Lines("/init.scope"), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := ParseCgroup(tt.content)
			if err != nil {
				t.Fatalf("ParseCgroup: %v", err)
			}
			if cg.PodUID != tt.uid || cg.ContainerID != tt.id || cg.InPod != tt.ok || cg.Malformed != 0 {
				t.Errorf("ParseCgroup = %+v, want (%q, %q, %v) and no malformed line", cg, tt.uid, tt.id, tt.ok)
			}
		})
	}
}

func TestParseCgroupMalformed(t *testing.T) {
	tests := []struct{ name, content, wantInErr string }{
		{"not a uid", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podnot-a-uid.slice/cri-containerd-" + ctrA + ".scope\n", "not-a-uid"},
		{"systemd slice with dashes", "0::/kubepods.slice/kubepods-pod" + uid + ".slice\n", uid},
		{"uppercase uid", "0::/kubepods.slice/kubepods-pod" + strings.ToUpper(uidSlice) + ".slice\n", "invalid pod UID"},
		{"short uid", "0::/kubepods.slice/kubepods-pod" + uidSlice[:35] + ".slice\n", "invalid pod UID"},
		{"cgroupfs bad uid", "0::/kubepods/burstable/pod1234/" + ctrA + "\n", "pod1234"},
		{"cgroupfs guaranteed bad uid", v1Lines("/kubepods/podzz/" + ctrA), "invalid pod UID"},
		{"short container id", "0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/cri-containerd-abc.scope\n", `"abc"`},
		{"uppercase container id", "0::/kubepods.slice/kubepods-pod" + uidSlice + ".slice/cri-containerd-" + strings.ToUpper(ctrA) + ".scope\n", "invalid container ID"},
		{"crio id too short", "0::/kubepods/besteffort/pod" + uid + "/crio-" + ctrB[:63] + "\n", "invalid container ID"},
		{"bad id in literal cgroupsPath", "0::/system.slice/containerd.service/kubepods-pod" + uidSlice + ".slice:cri-containerd:xyz\n", "xyz"},
		{"no colons", "kubepods\n", "not hierarchy-ID"},
		{"one colon", "0:/kubepods\n", "not hierarchy-ID"},
		{"hierarchy not a number", "x::/\n", "not a number"},
		{"relative path", "0::kubepods\n", "not absolute"},
		{"error on a later line", "0::/\n1:name=systemd:/kubepods/pod" + uid + "/crio-1\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := ParseCgroup(tt.content)
			if err == nil {
				t.Fatalf("ParseCgroup = %+v, want an error", cg)
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantInErr)
			}
			if cg.PodUID != "" || cg.ContainerID != "" || cg.InPod || cg.Malformed == 0 {
				t.Errorf("ParseCgroup returned %+v with an error, want nothing but the malformed lines counted", cg)
			}
		})
	}
}

// The collector resolves every new PID; parsing must not allocate beyond
// the one string the systemd UID needs.
func TestParseCgroupAllocs(t *testing.T) {
	cases := []struct {
		content string
		max     float64
	}{
		{"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n", 1},
		{v1Lines("/kubepods/burstable/pod" + uid + "/" + ctrA), 0},
		{"0::/system.slice/nvidia-mps.service\n", 0},
	}
	for _, c := range cases {
		got := testing.AllocsPerRun(100, func() {
			if _, err := ParseCgroup(c.content); err != nil {
				t.Fatal(err)
			}
		})
		if got > c.max {
			t.Errorf("ParseCgroup(%q) allocates %v times, want at most %v", c.content, got, c.max)
		}
	}
}

var (
	wellFormedUID = regexp.MustCompile(`^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$`)
	wellFormedID  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

func FuzzParseCgroup(f *testing.F) {
	for _, s := range []string{
		"",
		"0::/\n",
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidSlice + ".slice/cri-containerd-" + ctrA + ".scope\n",
		"0::/../../kubepods-besteffort-pod" + uidSlice + ".slice/crio-conmon-" + ctrA + ".scope",
		v1Lines("/kubepods/burstable/pod" + uid + "/" + ctrB),
		"0::/system.slice/containerd.service/kubepods-pod" + uidSlice + ".slice:cri-containerd:" + ctrA,
		"0::/kubepods/pod" + staticUID + "/crio-" + ctrB,
		"0::/kubepods.slice/kubepods-podxyz.slice\n",
		"x:y\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		cg, err := ParseCgroup(content)
		if cg.Malformed < 0 || cg.Malformed > strings.Count(content, "\n")+1 {
			t.Fatalf("%d malformed lines in %d lines", cg.Malformed, strings.Count(content, "\n")+1)
		}
		if (cg.Malformed > 0) != (cg.Problem != nil) {
			t.Fatalf("Malformed %d but Problem %v", cg.Malformed, cg.Problem)
		}
		switch {
		case err != nil:
			if cg.PodUID != "" || cg.ContainerID != "" || cg.InPod || cg.Malformed == 0 {
				t.Fatalf("error %v with %+v", err, cg)
			}
		case cg.InPod:
			if !wellFormedUID.MatchString(cg.PodUID) {
				t.Fatalf("in a pod with malformed pod UID %q", cg.PodUID)
			}
			if cg.ContainerID != "" && !wellFormedID.MatchString(cg.ContainerID) {
				t.Fatalf("in a pod with malformed container ID %q", cg.ContainerID)
			}
			// One more junk line changes nothing but the count.
			junk, err := ParseCgroup(content + "\njunk\n")
			if err != nil || junk.PodUID != cg.PodUID || junk.ContainerID != cg.ContainerID || junk.Malformed != cg.Malformed+1 {
				t.Fatalf("a junk line changed %+v into %+v, %v", cg, junk, err)
			}
		default:
			if cg.PodUID != "" || cg.ContainerID != "" {
				t.Fatalf("not in a pod but returned %+v", cg)
			}
		}
	})
}
