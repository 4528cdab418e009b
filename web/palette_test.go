package web

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpuledger/gpuledger/billing/report"
)

// minAdjacentDE00 is the least CIEDE2000 distance between two series
// stacked next to each other on serve's cost-per-team chart (7 teams,
// then "other teams, platform and rounding"); minAnyDE00 between any two
// of them. A ΔE00 of about 2 is the smallest difference people notice
// side by side; 20 reads as a different colour at a glance, even small.
const (
	minAdjacentDE00 = 20
	minAnyDE00      = 10
)

// Neighbouring series of the cost-per-team chart are told apart, and the
// report's own stacked series too: the colours come from the one
// stylesheet, measured in CIEDE2000.
func TestTeamPaletteContrast(t *testing.T) {
	css := string(report.Stylesheet())
	colour := func(name string) [3]float64 {
		m := regexp.MustCompile(`--` + name + `:\s*#([0-9a-fA-F]{6})`).FindStringSubmatch(css)
		if m == nil {
			t.Fatalf("no --%s in the stylesheet", name)
		}
		return hexLab(m[1])
	}
	var series []string
	for _, c := range teamPalette {
		series = append(series, c[2:]) // "s-t1" is --t1
	}
	series = append(series, otherClass[2:])
	for i := range series {
		for j := i + 1; j < len(series); j++ {
			d := ciede2000(colour(series[i]), colour(series[j]))
			min := float64(minAnyDE00)
			if j == i+1 {
				min = minAdjacentDE00
				t.Logf("--%s | --%s: ΔE00 %.1f", series[i], series[j], d)
			}
			if d < min {
				t.Errorf("--%s and --%s: ΔE00 %.1f, want at least %.0f", series[i], series[j], d, min)
			}
		}
	}
	// The report's stacked bars: charge | share of unused capacity;
	// held | never allocated; used | busy, no container | idle
	// device time.
	for _, pair := range [][2]string{{"charge", "share"}, {"held", "unalloc"}, {"used", "unattr"}, {"unattr", "idle"}, {"alloc", "used"}} {
		if d := ciede2000(colour(pair[0]), colour(pair[1])); d < minAdjacentDE00 {
			t.Errorf("report series --%s and --%s: ΔE00 %.1f, want at least %d", pair[0], pair[1], d, minAdjacentDE00)
		}
	}
}

// The formula's reference pairs (Sharma, Wu and Dalal 2005, table 1).
func TestCIEDE2000(t *testing.T) {
	for _, c := range []struct {
		a, b [3]float64
		want float64
	}{
		{[3]float64{50, 2.6772, -79.7751}, [3]float64{50, 0, -82.7485}, 2.0425},
		{[3]float64{50, 2.5, 0}, [3]float64{73, 25, -18}, 27.1492},
		{[3]float64{60.2574, -34.0099, 36.2677}, [3]float64{60.4626, -34.1751, 39.4387}, 1.2644},
		{[3]float64{2.0776, 0.0795, -1.1350}, [3]float64{0.9033, -0.0636, -0.5514}, 0.9082},
	} {
		if got := ciede2000(c.a, c.b); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("ΔE00(%v, %v) = %.4f, want %.4f", c.a, c.b, got, c.want)
		}
	}
}

// hexLab is an sRGB colour ("2d5b88") in CIELAB (D65).
func hexLab(h string) [3]float64 {
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		rgb[i] = c
	}
	x := (0.4124564*rgb[0] + 0.3575761*rgb[1] + 0.1804375*rgb[2]) / 0.95047
	y := 0.2126729*rgb[0] + 0.7151522*rgb[1] + 0.0721750*rgb[2]
	z := (0.0193339*rgb[0] + 0.1191920*rgb[1] + 0.9503041*rgb[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// ciede2000 is the CIEDE2000 colour difference of two CIELAB colours.
func ciede2000(p, q [3]float64) float64 {
	rad, deg := math.Pi/180, 180/math.Pi
	l1, a1, b1 := p[0], p[1], p[2]
	l2, a2, b2 := q[0], q[1], q[2]
	cBar := (math.Hypot(a1, b1) + math.Hypot(a2, b2)) / 2
	g := 0.5 * (1 - math.Sqrt(math.Pow(cBar, 7)/(math.Pow(cBar, 7)+math.Pow(25, 7))))
	a1p, a2p := (1+g)*a1, (1+g)*a2
	c1p, c2p := math.Hypot(a1p, b1), math.Hypot(a2p, b2)
	hue := func(b, a float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		h := math.Atan2(b, a) * deg
		if h < 0 {
			h += 360
		}
		return h
	}
	h1p, h2p := hue(b1, a1p), hue(b2, a2p)
	dLp, dCp := l2-l1, c2p-c1p
	var dhp float64
	switch {
	case c1p*c2p == 0:
		dhp = 0
	case math.Abs(h2p-h1p) <= 180:
		dhp = h2p - h1p
	case h2p-h1p > 180:
		dhp = h2p - h1p - 360
	default:
		dhp = h2p - h1p + 360
	}
	dHp := 2 * math.Sqrt(c1p*c2p) * math.Sin(dhp/2*rad)
	lBarP, cBarP := (l1+l2)/2, (c1p+c2p)/2
	var hBarP float64
	switch {
	case c1p*c2p == 0:
		hBarP = h1p + h2p
	case math.Abs(h1p-h2p) <= 180:
		hBarP = (h1p + h2p) / 2
	case h1p+h2p < 360:
		hBarP = (h1p + h2p + 360) / 2
	default:
		hBarP = (h1p + h2p - 360) / 2
	}
	tt := 1 - 0.17*math.Cos((hBarP-30)*rad) + 0.24*math.Cos(2*hBarP*rad) + 0.32*math.Cos((3*hBarP+6)*rad) - 0.20*math.Cos((4*hBarP-63)*rad)
	dTheta := 30 * math.Exp(-math.Pow((hBarP-275)/25, 2))
	rc := 2 * math.Sqrt(math.Pow(cBarP, 7)/(math.Pow(cBarP, 7)+math.Pow(25, 7)))
	sl := 1 + 0.015*math.Pow(lBarP-50, 2)/math.Sqrt(20+math.Pow(lBarP-50, 2))
	sc, sh := 1+0.045*cBarP, 1+0.015*cBarP*tt
	rt := -math.Sin(2*dTheta*rad) * rc
	return math.Sqrt(math.Pow(dLp/sl, 2) + math.Pow(dCp/sc, 2) + math.Pow(dHp/sh, 2) + rt*(dCp/sc)*(dHp/sh))
}
