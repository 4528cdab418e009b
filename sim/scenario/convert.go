package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"regexp"
	"time"

	"github.com/gpuledger/gpuledger/gpu"
)

// Defaults the contract gives (or the product uses) for optional fields.
const (
	APIVersion                = "gpuledger/v1"
	KindScenario              = "Scenario"
	DefaultPollInterval       = time.Second
	DefaultLedgerInterval     = 60 * time.Second
	DefaultDriverSamplePeriod = time.Second / 6
	DefaultIdleWindow         = 10 * time.Minute
	DefaultIdleThreshold      = 0.05
	DefaultNoisyWindow        = time.Minute
	DefaultMemoryWindow       = 30 * time.Minute
	DefaultIdleWatts          = 60.0
	DefaultMaxWatts           = 400.0

	MPSViewClients = "clients"
	MPSViewServer  = "server"
)

const modeNames = "exclusive|timeslicing|mps|mig|hami"

var (
	gpuUUIDRE     = regexp.MustCompile(`^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	migUUIDRE     = regexp.MustCompile(`^MIG-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	containerIDRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// converter turns the File into clean types, applying defaults and the
// checks that need only one field or one object at a time. Cross-references
// are validate's job.
type converter struct {
	p   problems
	dir string
	dur time.Duration
}

func (c *converter) scenario(r *File) *Scenario {
	s := &Scenario{APIVersion: r.APIVersion, Kind: r.Kind, Name: c.text("name", r.Name, MaxNameLen, "a name"), Dir: c.dir}
	if r.APIVersion != APIVersion {
		c.p.addf("apiVersion", "%q is not %s", shortText(r.APIVersion), APIVersion)
	}
	if r.Kind != KindScenario {
		c.p.addf("kind", "%q is not %s", shortText(r.Kind), KindScenario)
	}
	var startOK bool
	s.Start, startOK = timeField(&c.p, "start", r.Start)
	if startOK && (s.Start.Before(MinStart) || !s.Start.Before(MaxStart)) {
		c.p.addf("start", "%s is outside [%s,%s): ledger times are Unix nanoseconds from 1970",
			s.Start.Format(time.RFC3339Nano), MinStart.Format(time.RFC3339), MaxStart.Format(time.RFC3339))
	}
	if r.Duration.set() {
		s.Duration = c.positive("duration", r.Duration, 0)
		if s.Duration > MaxDuration {
			c.p.addf("duration", "%s is longer than %s (366 days)", s.Duration, MaxDuration)
			s.Duration = 0
		}
	} else {
		c.p.addf("duration", "is required")
	}
	c.dur = s.Duration
	if c.dur <= 0 || !c.sizes(r) {
		// Every lifetime default and bound derives from the duration;
		// checking them against a missing one would only add noise.
		return s
	}
	s.PollInterval = c.bounded("pollInterval", r.PollInterval, DefaultPollInterval, MinPollInterval, MaxPollInterval)
	s.LedgerInterval = c.bounded("ledgerInterval", r.LedgerInterval, DefaultLedgerInterval, MinLedgerInterval, MaxLedgerInterval)
	if s.PollInterval > s.LedgerInterval && s.LedgerInterval >= MinLedgerInterval && s.PollInterval <= MaxPollInterval {
		// collect refuses --poll-interval above --ledger-interval: a
		// ledger row would cover a part of one poll.
		c.p.addf("pollInterval", "%s is longer than ledgerInterval %s", s.PollInterval, s.LedgerInterval)
	}
	s.DriverSamplePeriod = c.bounded("driverSamplePeriod", r.DriverSamplePeriod, DefaultDriverSamplePeriod, MinDriverSamplePeriod, MaxDriverSamplePeriod)
	s.Detection = c.detection(r.Detection)
	s.Node = c.node(r.Node)
	for i, ns := range r.Namespaces {
		s.Namespaces = append(s.Namespaces, c.namespace(index("namespaces", i), ns))
	}
	for i, g := range r.GPUs {
		s.GPUs = append(s.GPUs, c.gpu(index("gpus", i), i, g))
	}
	for i, pod := range r.Pods {
		s.Pods = append(s.Pods, c.pod(index("pods", i), pod))
	}
	for i, hp := range r.HostProcesses {
		s.HostProcesses = append(s.HostProcesses, c.process(index("hostProcesses", i), *hp, lifetimeOf(0, s.Duration, "the scenario's")))
	}
	return s
}

// positive parses a duration that must be > 0 when given.
func (c *converter) positive(path string, v Value, def time.Duration) time.Duration {
	d, ok := durationField(&c.p, path, v, def)
	if ok && d <= 0 {
		c.p.addf(path, "%s must be greater than zero", d)
	}
	return d
}

func (c *converter) detection(r FileDetection) Detection {
	d := Detection{
		IdleWindow:    c.bounded("detection.idleWindow", r.IdleWindow, DefaultIdleWindow, MinWindow, MaxWindow),
		IdleThreshold: DefaultIdleThreshold,
		NoisyWindow:   c.bounded("detection.noisyWindow", r.NoisyWindow, DefaultNoisyWindow, MinWindow, MaxWindow),
		MemoryWindow:  c.bounded("detection.memoryWindow", r.MemoryWindow, DefaultMemoryWindow, MinWindow, MaxWindow),
	}
	if r.IdleThreshold != nil {
		d.IdleThreshold = *r.IdleThreshold
		if !(d.IdleThreshold >= 0 && d.IdleThreshold <= 1) {
			c.p.addf("detection.idleThreshold", "%v is outside [0,1]", d.IdleThreshold)
		}
	}
	return d
}

func (c *converter) node(r FileNode) Node {
	if r.Name == "" {
		c.p.addf("node.name", "is required")
	}
	c.labels("node.labels", r.Labels)
	return Node{Name: c.text("node.name", r.Name, MaxNameLen, "a Kubernetes name"), Labels: r.Labels, ResourceSlices: c.resourceSlices("node.resourceSlices", r.ResourceSlices)}
}

func (c *converter) namespace(path string, r FileNamespace) Namespace {
	if r.Name == "" {
		c.p.addf(field(path, "name"), "is required")
	}
	c.labels(field(path, "labels"), r.Labels)
	return Namespace{Name: c.text(field(path, "name"), r.Name, MaxLabelLen, "a namespace name"), Labels: r.Labels}
}

func (c *converter) gpu(path string, pos int, r *FileGPU) GPU {
	g := GPU{
		Index:     pos, // the list position unless given
		UUID:      r.UUID,
		Model:     r.Model,
		Mode:      r.Mode,
		IdleWatts: DefaultIdleWatts,
		MaxWatts:  DefaultMaxWatts,
	}
	if r.MPS != nil {
		g.MPSProcessView = r.MPS.ProcessView
	}
	idx, _ := intField(&c.p, field(path, "index"), r.Index, int64(pos), 0, math.MaxInt32)
	g.Index = int(idx)
	minor, _ := intField(&c.p, field(path, "minor"), r.Minor, idx, 0, math.MaxInt32)
	g.Minor = int(minor)
	if !gpuUUIDRE.MatchString(r.UUID) {
		c.p.addf(field(path, "uuid"), "%q is not GPU-<8-4-4-4-12 hex>", shortText(r.UUID))
	}
	knownModel := gpu.KnownModel(r.Model)
	if !knownModel {
		c.p.addf(field(path, "model"), "%q is not one of %s", shortText(r.Model), gpu.ModelNames())
	}
	switch r.Mode {
	case ModeExclusive, ModeTimeslicing, ModeMPS, ModeMIG, ModeHAMi:
	default:
		c.p.addf(field(path, "mode"), "%q is not one of %s", shortText(r.Mode), modeNames)
	}
	switch g.MPSProcessView {
	case "":
		g.MPSProcessView = MPSViewClients
	case MPSViewClients, MPSViewServer:
	default:
		c.p.addf(field(path, "mps.processView"), "%q is not one of clients|server", shortText(g.MPSProcessView))
	}
	c.power(field(path, "power"), r.Power, &g)
	if len(r.MIGInstances) > 0 && r.Mode != ModeMIG {
		c.p.addf(field(path, "migInstances"), "given for mode %q; MIG instances need mode mig", shortText(r.Mode))
	}
	slices := 0
	for i, m := range r.MIGInstances {
		mp := index(field(path, "migInstances"), i)
		if !migUUIDRE.MatchString(m.UUID) {
			c.p.addf(field(mp, "uuid"), "%q is not MIG-<8-4-4-4-12 hex>", shortText(m.UUID))
		}
		// A compute-instance profile (1c.3g.40gb) is one compute instance
		// alone in its GPU instance (3g.40gb), which it fills.
		if prof, ok := lookupGPUInstance(r.Model, m.Profile); ok {
			slices += prof.Slices
		} else if knownModel {
			c.p.addf(field(mp, "profile"), "%q is not a MIG profile of %s", shortText(m.Profile), shortText(r.Model))
		}
		gi, _ := intField(&c.p, field(mp, "gi"), m.GI, int64(i), 0, math.MaxInt32)
		g.MIGInstances = append(g.MIGInstances, MIGInstance{UUID: m.UUID, Profile: m.Profile, GI: int(gi)})
	}
	if slices > gpu.TotalSlices {
		c.p.addf(field(path, "migInstances"), "profiles use %d compute slices, more than the %d a GPU has", slices, gpu.TotalSlices)
	}
	return g
}

func (c *converter) power(path string, r FilePower, g *GPU) {
	if r.IdleWatts != nil {
		g.IdleWatts = *r.IdleWatts
	}
	if r.MaxWatts != nil {
		g.MaxWatts = *r.MaxWatts
	}
	ok := true
	for _, w := range []struct {
		name string
		v    float64
	}{{"idleWatts", g.IdleWatts}, {"maxWatts", g.MaxWatts}} {
		if !(w.v >= 0) || math.IsInf(w.v, 0) {
			c.p.addf(field(path, w.name), "%v must be a finite number >= 0", w.v)
			ok = false
		}
	}
	if ok && g.IdleWatts > g.MaxWatts {
		c.p.addf(field(path, "idleWatts"), "%v is above maxWatts %v", g.IdleWatts, g.MaxWatts)
	}
}

func (c *converter) pod(path string, r *FilePod) Pod {
	pod := Pod{
		UID:         c.text(field(path, "uid"), r.UID, MaxNameLen, "a pod UID"),
		Namespace:   c.text(field(path, "namespace"), r.Namespace, MaxLabelLen, "a namespace name"),
		Name:        c.text(field(path, "name"), r.Name, MaxNameLen, "a Kubernetes name"),
		Labels:      r.Labels,
		Annotations: r.Annotations,
	}
	c.labels(field(path, "labels"), r.Labels)
	c.annotations(field(path, "annotations"), r.Annotations)
	var okStart, okEnd bool
	pod.Start, okStart = durationField(&c.p, field(path, "start"), r.Start, 0)
	pod.End, okEnd = durationField(&c.p, field(path, "end"), r.End, c.dur)
	for _, f := range []struct{ name, v string }{{"uid", r.UID}, {"namespace", r.Namespace}, {"name", r.Name}} {
		if f.v == "" {
			c.p.addf(field(path, f.name), "is required")
		}
	}
	switch {
	case !okStart || !okEnd:
	case pod.End > c.dur:
		c.p.addf(field(path, "end"), "%s is after the scenario's duration %s", pod.End, c.dur)
	case pod.Start >= pod.End:
		c.p.addf(field(path, "start"), "%s is not before the pod's end %s", pod.Start, pod.End)
	}
	lifeOK := okStart && okEnd && pod.Start < pod.End && pod.End <= c.dur
	pod.InitContainers = c.initContainers(path, r, pod.Start, pod.End, lifeOK)
	// Regular containers start, and are listed with their devices, once
	// the last plain init container has ended.
	run := lifetimeOf(pod.Start, pod.End, "the pod's").defaulting(pod.ContainersStart(), pod.End)
	for i, rc := range r.Containers {
		ct := c.container(index(field(path, "containers"), i), r.UID, rc.Name, &rc.FileContainerSpec, run)
		ct.Start, ct.End = pod.ContainersStart(), pod.End
		pod.Containers = append(pod.Containers, ct)
	}
	pod.AnnotationChanges = c.annotationChanges(field(path, "annotationChanges"), r.AnnotationChanges, pod, lifeOK)
	return pod
}

func (c *converter) container(path, podUID, name string, r *FileContainerSpec, life span) Container {
	ct := Container{Name: c.text(field(path, "name"), name, MaxLabelLen, "a container name"), ID: r.ID}
	if name == "" {
		c.p.addf(field(path, "name"), "is required")
	}
	if ct.ID == "" {
		ct.ID = ContainerID(podUID, name)
	} else if !containerIDRE.MatchString(ct.ID) {
		c.p.addf(field(path, "id"), "%q is not 64 lowercase hex digits", shortText(ct.ID))
	}
	for i, d := range r.Devices {
		dp := index(field(path, "devices"), i)
		if d.Resource == "" {
			c.p.addf(field(dp, "resource"), "is required")
		}
		d.Resource = c.text(field(dp, "resource"), d.Resource, MaxLabelKeyLen, "a resource name")
		if len(d.IDs) == 0 {
			c.p.addf(field(dp, "ids"), "must list at least one device ID")
		}
		for j, id := range d.IDs {
			if id == "" {
				c.p.addf(index(field(dp, "ids"), j), "%q is empty", id)
			}
			c.text(index(field(dp, "ids"), j), id, MaxNameLen, "a device ID")
		}
		ct.Devices = append(ct.Devices, DeviceRequest(d))
	}
	ct.Claims = c.claims(field(path, "claims"), r.Claims)
	ct.Limits = c.limits(field(path, "limits"), r.Limits)
	for i, rp := range r.Processes {
		ct.Processes = append(ct.Processes, c.process(index(field(path, "processes"), i), *rp, life))
	}
	return ct
}

// ContainerID is the ID a container gets when the scenario gives none:
// hex(sha256(podUID + "/" + name)), stable across runs.
func ContainerID(podUID, name string) string {
	sum := sha256.Sum256([]byte(podUID + "/" + name))
	return hex.EncodeToString(sum[:])
}

// span is the lifetime a process must fit in, with the names of its two
// ends for messages ("the pod's start"), and the window its start and end
// default to (its container's run window, which may be narrower).
type span struct {
	start, end         time.Duration
	startName, endName string
	defStart, defEnd   time.Duration
}

// lifetimeOf names a span's ends after its owner, given in the possessive
// ("the pod's").
func lifetimeOf(start, end time.Duration, whose string) span {
	return span{start, end, whose + " start", whose + " end", start, end}
}

// defaulting returns s with processes defaulting to [start, end]. The
// bounds stay the pod's lifetime: the contract rejects only processes
// outside their pod's lifetime, so a process that runs before its
// container's turn (or after an init container's end) is simulated as
// written rather than refused.
func (s span) defaulting(start, end time.Duration) span {
	s.defStart, s.defEnd = start, end
	return s
}

// lookupGPUInstance finds the model's GPU-instance profile of a MIG
// instance: the profile itself, or for a compute-instance profile
// (1c.3g.40gb) the GPU instance it lives in (3g.40gb).
func lookupGPUInstance(model, profile string) (gpu.MIGProfile, bool) {
	p, err := gpu.ParseProfile(profile)
	if err != nil {
		return gpu.MIGProfile{}, false
	}
	return gpu.LookupProfile(model, p.GPUInstance().String())
}
