package whatif

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Mode is a sharing mechanism, named as the ledger names sharing modes.
type Mode string

// The three mechanisms.
const (
	MIG         Mode = "mig"
	MPS         Mode = "mps"
	TimeSlicing Mode = "timeslicing"
)

// AllModes in the order the reference model's table lists them.
var AllModes = []Mode{MIG, MPS, TimeSlicing}

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case MIG, MPS, TimeSlicing:
		return Mode(s), nil
	}
	return "", fmt.Errorf("mode %q: want mig, mps or timeslicing", s)
}

// The reference model's parameters.
const (
	// DefaultMPSContention is the reference model's soft slowdown per concurrently
	// active MPS tenant.
	DefaultMPSContention = 0.18
	// DefaultHostileContention is the coefficient every MPS tenant sees
	// while a hostile tenant has work in flight. The reference model says only "raise
	// the contention coefficient"; 1.0 (each active co-resident doubles a
	// kernel's time, a bandwidth-saturating neighbour) is our choice.
	DefaultHostileContention = 1.0
	// DefaultSwitch is the reference model's time-slicing context-switch cost.
	DefaultSwitch = 800 * time.Microsecond
	// HostileServiceFactor and HostileRateFactor make the reference model's hostile
	// tenant: ten times the service time, twice the arrival rate.
	HostileServiceFactor = 10
	HostileRateFactor    = 2
)

// Limits that keep a simulation finite and its sums exact enough.
const (
	maxTenants = 1024
	// MaxRequests bounds the expected requests one Simulate, or one
	// Compare with all its runs together, may simulate: half a billion,
	// a minute or so of one core (a month of seven tenants at 12 rps
	// is 218 million). Cancelling the context stops any of them sooner.
	MaxRequests = 5e8
)

// Tenant is one client of the GPU.
type Tenant struct {
	Name string
	// Rate is the Poisson arrival rate, requests per second (> 0).
	Rate float64
	// Service is one request's compute time on the whole card (> 0).
	Service time.Duration
	// Hostile marks the reference model's hostile tenant: under MPS, while it has
	// work in flight, every tenant's contention coefficient is
	// Layout.HostileContention. (Give it its 10x service and 2x rate in
	// Service and Rate; see Hostile.)
	Hostile bool
}

// Hostile returns t turned into the reference model's hostile tenant.
func Hostile(t Tenant) Tenant {
	t.Hostile = true
	t.Rate *= HostileRateFactor
	t.Service *= HostileServiceFactor
	return t
}

// Layout is how the card is shared. The zero value of each field means
// the reference model's default.
type Layout struct {
	// MIGFractions is each tenant's share of the card under MIG (a
	// profile's compute slices / 7); nil: 1/N each. They may add up to at
	// most 1.
	MIGFractions []float64
	// MPSContention is c in S(1 + c·k); 0 means DefaultMPSContention,
	// anything else must be positive.
	MPSContention float64
	// HostileContention replaces MPSContention while a hostile tenant
	// has work in flight; 0 means DefaultHostileContention.
	HostileContention float64
	// Switch is the time-slicing context-switch cost; 0 means
	// DefaultSwitch, NoSwitch for none.
	Switch time.Duration
}

// NoSwitch is a Layout.Switch of zero cost.
const NoSwitch time.Duration = -1

// Config is one simulation.
type Config struct {
	Tenants  []Tenant
	Layout   Layout
	Duration time.Duration
	// Seed fixes the random stream: tenant i's arrivals in run r come from
	// their own stream, so adding, removing or changing one tenant leaves
	// the others' arrivals as they were.
	Seed uint64
	// leaveOut+1 is a tenant left out of the well-behaved pool although
	// not hostile (the hostile exercise's benign baseline); 0: none.
	leaveOut int
	// onChunk, when set, is called after each chunk of arrivals is
	// handed to the mechanisms (tests count the work done).
	onChunk func()
}

// ExpectedRequests is the number of requests one run of c is expected to
// simulate: the arrival rates times the duration.
func (c Config) ExpectedRequests() float64 {
	var sum float64
	for _, t := range c.Tenants {
		sum += t.Rate
	}
	return sum * c.Duration.Seconds()
}

// Capped returns c with its duration shortened so that one run is
// expected to simulate at most maxRequests requests, and whether it had
// to shorten it. The rates, service times and switch cost stay as they
// are, so the queues see the same utilisation and the latencies keep
// their scale; only fewer requests are watched. (Stretching every time
// by k and dividing the results by k, the other way to coarsen, is the
// same simulation.) The duration never drops below a millisecond.
func (c Config) Capped(maxRequests float64) (Config, bool) {
	n := c.ExpectedRequests()
	if !(n > maxRequests) || !(maxRequests > 0) {
		return c, false
	}
	d := time.Duration(float64(c.Duration) * maxRequests / n)
	c.Duration = max(d, time.Millisecond)
	return c, true
}

// params are a validated Config in seconds.
type params struct {
	n          int
	rate       []float64
	svc        []float64 // full-card service time, seconds
	migSvc     []float64 // service time on the tenant's MIG instance
	hostile    []bool
	hostileBit []uint64 // 1 for a hostile tenant
	anyHost    bool
	c, ch      float64
	sw         float64
	duration   float64
}

func (c Config) params() (params, error) {
	n := len(c.Tenants)
	if n == 0 {
		return params{}, errors.New("cannot simulate: no tenants")
	}
	if n > maxTenants {
		return params{}, fmt.Errorf("cannot simulate: %d tenants, at most %d", n, maxTenants)
	}
	if c.Duration <= 0 {
		return params{}, fmt.Errorf("cannot simulate: duration %s is not positive", c.Duration)
	}
	p := params{n: n, duration: c.Duration.Seconds(), rate: make([]float64, n), svc: make([]float64, n),
		migSvc: make([]float64, n), hostile: make([]bool, n), hostileBit: make([]uint64, n)}
	var expected float64
	for i, t := range c.Tenants {
		if !(t.Rate > 0) || math.IsInf(t.Rate, 0) {
			return params{}, fmt.Errorf("cannot simulate: tenant %d (%s): arrival rate %v is not a positive number", i, t.Name, t.Rate)
		}
		if t.Service <= 0 {
			return params{}, fmt.Errorf("cannot simulate: tenant %d (%s): service time %s is not positive", i, t.Name, t.Service)
		}
		p.rate[i], p.svc[i], p.hostile[i] = t.Rate, t.Service.Seconds(), t.Hostile
		p.anyHost = p.anyHost || t.Hostile
		if t.Hostile {
			p.hostileBit[i] = 1
		}
		expected += t.Rate * p.duration
	}
	if expected > MaxRequests {
		return params{}, fmt.Errorf("cannot simulate: %.3g expected requests, at most %.0g: shorten the duration or lower the rates", expected, MaxRequests)
	}
	l := c.Layout
	switch {
	case l.MIGFractions == nil:
		for i := range p.migSvc {
			p.migSvc[i] = p.svc[i] * float64(n)
		}
	case len(l.MIGFractions) != n:
		return params{}, fmt.Errorf("cannot simulate: %d MIG fractions for %d tenants", len(l.MIGFractions), n)
	default:
		var sum float64
		for i, f := range l.MIGFractions {
			if !(f > 0 && f <= 1) {
				return params{}, fmt.Errorf("cannot simulate: tenant %d: MIG fraction %v is not in (0, 1]", i, f)
			}
			sum += f
			p.migSvc[i] = p.svc[i] / f
		}
		if sum > 1+1e-9 {
			return params{}, fmt.Errorf("cannot simulate: MIG fractions add up to %.4f, more than the card", sum)
		}
	}
	p.c, p.ch = l.MPSContention, l.HostileContention
	if p.c == 0 {
		p.c = DefaultMPSContention
	}
	if p.ch == 0 {
		p.ch = DefaultHostileContention
	}
	if !(p.c > 0) || !(p.ch > 0) || math.IsInf(p.c, 0) || math.IsInf(p.ch, 0) {
		return params{}, fmt.Errorf("cannot simulate: contention coefficients %v and %v must be positive", p.c, p.ch)
	}
	switch {
	case l.Switch == NoSwitch:
	case l.Switch == 0:
		p.sw = DefaultSwitch.Seconds()
	case l.Switch < 0:
		return params{}, fmt.Errorf("cannot simulate: switch cost %s is negative", l.Switch)
	default:
		p.sw = l.Switch.Seconds()
	}
	return p, nil
}
