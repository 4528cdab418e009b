package allocation

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encoded is r as encoding/json's indenting encoder writes it, which
// WriteJSON must equal.
func encoded(r *Result) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	err := enc.Encode(r)
	return b.Bytes(), err
}

func written(r *Result) ([]byte, error) {
	var b bytes.Buffer
	err := WriteJSON(&b, r)
	return b.Bytes(), err
}

// names a tenant could give its pods and namespaces, the awkward ones
// first: HTML's characters, quotes, controls, separators, invalid UTF-8.
var awkward = []string{"", "team-a", "<script>&amp;", `"q"\`, "tab\tnew\nline\x00", "line\u2028para\u2029", "\xff\xfe", "é字🙂", "a/b", "\x1f", "\u007f"}

func randomString(rng *rand.Rand) string {
	if rng.IntN(3) > 0 {
		return awkward[rng.IntN(len(awkward))]
	}
	b := make([]byte, rng.IntN(12))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return string(b)
}

func randomNumber(rng *rand.Rand) json.Number {
	return json.Number([]string{"", "0", "-0.5", "12.345678", "1e9", "-3E-2", "1234567890123.000001"}[rng.IntN(7)])
}

func randomResult(rng *rand.Rand) *Result {
	r := &Result{
		Window: Window{Start: randomString(rng), End: randomString(rng), Timezone: randomString(rng), DataStart: randomString(rng),
			DataEnd: randomString(rng), Partial: rng.IntN(2) == 0, PartialNote: randomString(rng)},
		Currency: randomString(rng), Policy: randomString(rng), Idle: randomString(rng),
		Filter: randomString(rng), Step: randomString(rng), Source: randomString(rng), Total: randomNumber(rng),
	}
	if rng.IntN(4) > 0 {
		r.Aggregate = []string{}
		for i := rng.IntN(4); i > 0; i-- {
			r.Aggregate = append(r.Aggregate, randomString(rng))
		}
	}
	if rng.IntN(5) == 0 {
		return r // no sets: null
	}
	r.Sets = []Set{}
	for i := rng.IntN(4); i > 0; i-- {
		s := Set{Start: randomString(rng), End: randomString(rng), Total: randomNumber(rng)}
		if rng.IntN(5) > 0 {
			s.Entries = []Entry{}
		}
		for j := rng.IntN(5); j > 0 && s.Entries != nil; j-- {
			e := Entry{Name: randomString(rng), HeldHours: randomNumber(rng), UsedHours: randomNumber(rng), IdleHours: randomNumber(rng),
				IdleShareHours: randomNumber(rng), MemoryMiBHours: randomNumber(rng), EnergyKWh: randomNumber(rng),
				Charge: randomNumber(rng), IdleShare: randomNumber(rng), Platform: randomNumber(rng), Rounding: randomNumber(rng),
				Total: randomNumber(rng), Values: []string{"not written"}, charge: 7}
			if rng.IntN(5) > 0 {
				e.Keys = map[string]string{}
				for k := rng.IntN(4); k > 0; k-- {
					e.Keys[randomString(rng)] = randomString(rng)
				}
			}
			if rng.IntN(3) > 0 {
				x := randomNumber(rng)
				e.Efficiency = &x
			}
			s.Entries = append(s.Entries, e)
		}
		r.Sets = append(r.Sets, s)
	}
	return r
}

// WriteJSON writes what encoding/json writes, byte for byte, on random
// answers whose strings are whatever tenants may name things.
func TestWriteJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3000; i++ {
		r := randomResult(rng)
		want, err := encoded(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := written(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("answer %d:\n got %q\nwant %q", i, got, want)
		}
	}
	// A large answer, written out in several pieces.
	r := &Result{Sets: []Set{{Entries: make([]Entry, 3000)}}}
	for i := range r.Sets[0].Entries {
		r.Sets[0].Entries[i] = Entry{Name: strings.Repeat("p", i%50), Keys: map[string]string{"pod": "x", "namespace": "y"}}
	}
	want, _ := encoded(r)
	got, err := written(r)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a large answer differs (%v)", err)
	}
}

// A number that is not one is refused, as the encoder refuses it.
func TestWriteJSONRefusesANonNumber(t *testing.T) {
	for _, n := range []json.Number{"1.", "-", ".5", "1e", "01", "1 ", " 1", "NaN", "0x10", "1e+", "--1", "\"1\""} {
		r := &Result{Total: n}
		if _, err := encoded(r); err == nil {
			t.Fatalf("encoding/json accepts %q", n)
		}
		if got, err := written(r); err == nil || !strings.Contains(err.Error(), "invalid number") || len(got) != 0 {
			t.Fatalf("WriteJSON(%q): %v and %d bytes written, want an invalid number error and none", n, err, len(got))
		}
	}
	// One in the last entry of an answer made in parts and chunks: nothing
	// of it is written either (a server then answers with an error page).
	defer func(n int) { minEntriesPerPart = n }(minEntriesPerPart)
	minEntriesPerPart = 10
	r := &Result{Sets: []Set{{Entries: make([]Entry, 2000)}}}
	r.Sets[0].Entries[1999].Total = "1."
	if got, err := written(r); err == nil || len(got) != 0 {
		t.Fatalf("a bad number in a large answer: %v and %d bytes written, want an error and none", err, len(got))
	}
}

// FuzzWriteJSONString: any name a tenant gives is written as the encoder
// writes it.
func FuzzWriteJSONString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := &Result{Source: s, Aggregate: []string{s}, Sets: []Set{{Entries: []Entry{{Name: s, Keys: map[string]string{s: s, "x": s}}}}}}
		want, _ := encoded(r)
		got, err := written(r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q (%v), want %q", s, got, err, want)
		}
	})
}

// validNumber accepts what encoding/json accepts as a number: the texts
// json.Valid takes that start with a sign or a digit and end with a
// digit, on random texts of number characters.
func TestValidNumberIsJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const alphabet = "0123456789-+.eE x"
	for i := 0; i < 200000; i++ {
		b := make([]byte, rng.IntN(8))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		want := s != "" && (s[0] == '-' || ('0' <= s[0] && s[0] <= '9')) && '0' <= s[len(s)-1] && s[len(s)-1] <= '9' && json.Valid(b)
		if got := validNumber(s); got != want {
			t.Fatalf("validNumber(%q) = %v, want %v", s, got, want)
		}
	}
}
