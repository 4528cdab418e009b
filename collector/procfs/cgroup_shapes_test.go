package procfs

import (
	"strings"
	"testing"
)

// Whole /proc/<pid>/cgroup files as the runtimes in use produce them. The
// shapes are facts documented or tested by the projects that make them;
// each case names its source.
//
// IDs: 64 lowercase hex for containers (containerd, CRI-O and Docker all
// use them), pod UIDs as the API server issues them, and a 32-hex static
// pod UID (kubelet hashes the manifest).
const (
	shapeUID       = "48d25824-cbe2-4fdc-9928-5bb49e05473d"
	shapeUIDSlice  = "48d25824_cbe2_4fdc_9928_5bb49e05473d"
	shapeStaticUID = "d76e26fba3bf2bfd215eb29011d55250"
	shapeCtr       = "c40dff48f1d53c3f07a50aa12bb9ae0e58c0927dc6b1d77e3f166784722642ad"
	shapeKindNode  = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
)

// v1File is a cgroup v1 (hybrid) file of a containerised process: twelve
// controllers, the hierarchy IDs in the kernel's descending order,
// "1:name=systemd" last among them, the rdma controller left at the root
// (no runtime sets it) and the empty unified hierarchy "0::/" of a hybrid
// host. Kernel: Documentation/admin-guide/cgroup-v1/cgroups.rst
// ("/proc/<pid>/cgroup lists a process's cgroup membership",
// hierarchy-ID:subsystems:path) and cgroup-v2.rst ("0::$PATH").
func v1File(path string) string {
	return strings.Join([]string{
		"12:hugetlb:" + path,
		"11:devices:" + path,
		"10:perf_event:" + path,
		"9:net_cls,net_prio:" + path,
		"8:freezer:" + path,
		"7:pids:" + path,
		"6:rdma:/",
		"5:cpu,cpuacct:" + path,
		"4:blkio:" + path,
		"3:cpuset:" + path,
		"2:memory:" + path,
		"1:name=systemd:" + path,
		"0::/",
	}, "\n") + "\n"
}

func TestParseCgroupRealShapes(t *testing.T) {
	tests := []struct {
		name, content string
		uid, id       string
		inPod         bool
	}{
		// Kubernetes pkg/kubelet/cm/cgroup_manager_linux.go, CgroupName.ToSystemd:
		// {"kubepods","burstable","pod<uid>"} becomes
		// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid, "-" escaped to "_">.slice.
		// containerd (internal/cri, SystemdCgroup = true) hands runc the
		// cgroupsPath "<pod slice>:cri-containerd:<id>", which runc
		// (libcontainer/specconv, "slice:prefix:name") turns into the
		// scope <prefix>-<name>.scope.
		{"containerd, systemd driver, burstable",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		{"containerd, systemd driver, besteffort",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		// Guaranteed pods sit directly below kubepods (pkg/kubelet/cm
		// qos_container_manager_linux.go creates only burstable and
		// besteffort QoS cgroups).
		{"containerd, systemd driver, guaranteed (no QoS level)",
			"0::/kubepods.slice/kubepods-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		// CgroupName.ToCgroupfs: "/" + path.Join(kubepods, qos, "pod"+uid);
		// containerd without SystemdCgroup names the container cgroup by its
		// bare ID (cAdvisor container/containerd/factory_test.go,
		// "/kubepods/besteffort/pod<uid>/<64 hex>").
		{"containerd, cgroupfs driver, burstable",
			"0::/kubepods/burstable/pod" + shapeUID + "/" + shapeCtr + "\n",
			shapeUID, shapeCtr, true},
		{"containerd, cgroupfs driver, guaranteed",
			"0::/kubepods/pod" + shapeUID + "/" + shapeCtr + "\n",
			shapeUID, shapeCtr, true},
		{"containerd, cgroupfs driver, static pod (cAdvisor's 32-hex UID)",
			"0::/kubepods/besteffort/pod" + shapeStaticUID + "/" + shapeCtr + "\n",
			shapeStaticUID, shapeCtr, true},
		// CRI-O internal/config/cgmgr/systemd_linux.go: the container is
		// <pod slice>/crio-<id>.scope, conmon runs in the unit
		// "crio-conmon-<id>.scope" beside it (MoveConmonToCgroup), and crun
		// configures a "container" child of the container's cgroup.
		{"cri-o, systemd driver",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/crio-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		{"cri-o with crun's container child",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/crio-" + shapeCtr + ".scope/container\n",
			shapeUID, shapeCtr, true},
		{"cri-o conmon is in the pod, not the container",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/crio-conmon-" + shapeCtr + ".scope\n",
			shapeUID, "", true},
		// CRI-O internal/config/cgmgr/cgroupfs_linux.go: conmon in
		// <parent>/crio-conmon-<id>; containers in <parent>/crio-<id>.
		{"cri-o, cgroupfs driver",
			"0::/kubepods/besteffort/pod" + shapeUID + "/crio-" + shapeCtr + "\n",
			shapeUID, shapeCtr, true},
		{"cri-o conmon, cgroupfs driver",
			"0::/kubepods/besteffort/pod" + shapeUID + "/crio-conmon-" + shapeCtr + "\n",
			shapeUID, "", true},
		// Docker (dockershim, now cri-dockerd) with the systemd driver
		// passes runc "<slice>:docker:<id>" (runc's own example of
		// "slice:prefix:name" is "system.slice:docker:1234"), hence
		// docker-<id>.scope; with cgroupfs the bare ID below the pod.
		{"cri-dockerd, systemd driver",
			"0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + shapeUIDSlice + ".slice/docker-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		{"cri-dockerd, cgroupfs driver, besteffort",
			"0::/kubepods/besteffort/pod" + shapeUID + "/" + shapeCtr + "\n",
			shapeUID, shapeCtr, true},
		// cgroup v1: the container in every hierarchy.
		{"v1 cgroupfs docker, 12 controllers",
			v1File("/kubepods/besteffort/pod" + shapeUID + "/" + shapeCtr),
			shapeUID, shapeCtr, true},
		{"v1 systemd containerd, 12 controllers",
			v1File("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope"),
			shapeUID, shapeCtr, true},
		{"v1 systemd cri-o guaranteed, 12 controllers",
			v1File("/kubepods.slice/kubepods-pod" + shapeUIDSlice + ".slice/crio-" + shapeCtr + ".scope"),
			shapeUID, shapeCtr, true},
		// kind (kubernetes-sigs/kind kubeadm config: cgroupDriver systemd,
		// cgroupRoot /kubelet) inside a Docker node container: kubelet's
		// slices are named kubelet-kubepods-..., below the node's own
		// docker-<id>.scope.
		{"kind node in docker",
			"0::/system.slice/docker-" + shapeKindNode + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		{"kind node, seen from its cgroup namespace",
			"0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope\n",
			shapeUID, shapeCtr, true},
		// Host processes: systemd services (NVIDIA's persistence daemon and
		// MPS control daemon run as units), v1 and v2.
		{"nvidia-persistenced, v2", "0::/system.slice/nvidia-persistenced.service\n", "", "", false},
		{"nvidia-persistenced, v1", v1File("/system.slice/nvidia-persistenced.service"), "", "", false},
		{"kubelet itself", "0::/system.slice/kubelet.service\n", "", "", false},
		{"a plain docker container, not a pod", "0::/system.slice/docker-" + shapeCtr + ".scope\n", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := ParseCgroup(tt.content)
			if err != nil {
				t.Fatalf("ParseCgroup: %v", err)
			}
			if cg.PodUID != tt.uid || cg.ContainerID != tt.id || cg.InPod != tt.inPod || cg.Malformed != 0 {
				t.Errorf("ParseCgroup = %+v, want (%q, %q, %v), nothing malformed", cg, tt.uid, tt.id, tt.inPod)
			}
		})
	}
}

// A malformed line does not hide the container the other lines name; it
// is counted. Only a file in which nothing names a pod and something is
// malformed is an error: that process may be in a pod nobody can tell.
func TestParseCgroupToleratesMalformedLines(t *testing.T) {
	containerdV2 := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + shapeUIDSlice + ".slice/cri-containerd-" + shapeCtr + ".scope"
	cgroupfsPath := "/kubepods/besteffort/pod" + shapeUID + "/" + shapeCtr
	tests := []struct {
		name, content string
		uid, id       string
		inPod         bool
		malformed     int
		wantErr       bool
	}{
		{"CRLF line ends", strings.ReplaceAll(v1File(cgroupfsPath), "\n", "\r\n"), shapeUID, shapeCtr, true, 0, false},
		{"CRLF v2", containerdV2 + "\r\n", shapeUID, shapeCtr, true, 0, false},
		{"empty lines", "\n\n" + containerdV2 + "\n\n\n", shapeUID, shapeCtr, true, 0, false},
		{"junk line before", "garbage\n" + containerdV2 + "\n", shapeUID, shapeCtr, true, 1, false},
		{"junk line after", containerdV2 + "\n\x00\x01binary\n", shapeUID, shapeCtr, true, 1, false},
		{"a v1 line cut short", strings.Replace(v1File(cgroupfsPath), "11:devices:"+cgroupfsPath, "11:devices", 1), shapeUID, shapeCtr, true, 1, false},
		{"a v1 line with a relative path", strings.Replace(v1File(cgroupfsPath), "7:pids:/", "7:pids:", 1), shapeUID, shapeCtr, true, 1, false},
		{"a hierarchy with a bad pod UID, the others fine",
			"3:memory:/kubepods/besteffort/podnot-a-uid/" + shapeCtr + "\n2:cpu,cpuacct:" + cgroupfsPath + "\n",
			shapeUID, shapeCtr, true, 1, false},
		{"conmon and junk", "junk\n0::/kubepods/besteffort/pod" + shapeUID + "/crio-conmon-" + shapeCtr + "\n", shapeUID, "", true, 1, false},
		{"only junk", "junk\n", "", "", false, 1, true},
		{"a host process and junk", "0::/system.slice/nvidia-persistenced.service\njunk\n", "", "", false, 1, true},
		{"every line malformed", "a\nb:c\nx::/\n", "", "", false, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := ParseCgroup(tt.content)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCgroup error = %v, want error %v", err, tt.wantErr)
			}
			if cg.PodUID != tt.uid || cg.ContainerID != tt.id || cg.InPod != tt.inPod || cg.Malformed != tt.malformed {
				t.Errorf("ParseCgroup = %+v, want (%q, %q, %v) with %d malformed", cg, tt.uid, tt.id, tt.inPod, tt.malformed)
			}
			if (cg.Malformed > 0) != (cg.Problem != nil) {
				t.Errorf("Malformed %d with Problem %v", cg.Malformed, cg.Problem)
			}
		})
	}
}
