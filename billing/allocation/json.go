package allocation

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// WriteJSON writes r as encoding/json's Encoder with SetIndent("", "  ")
// writes it, byte for byte, newline included (TestWriteJSONIsEncodingJSONs).
// A month by pod is some 20,000 entries and 14 MB: the encoder's
// reflection, its sorted map keys and its second pass to indent took a
// third of a second of such an answer, and this writes it in one pass.
// An answer that cannot be made (a number that is not one) leaves w
// untouched (EncodeJSON); an error of w's own may leave part of it there.
func WriteJSON(w io.Writer, r *Result) error {
	j, err := EncodeJSON(r)
	if err != nil {
		return err
	}
	_, err = j.WriteTo(w)
	return err
}

// EncodeJSON makes the answer WriteJSON writes, whole, before any of it
// is written: a server sets its headers once it knows it has one.
func EncodeJSON(r *Result) (JSON, error) {
	a := jsonWriter{buf: make([]byte, 0, chunkSize)}
	a.result(r)
	a.buf = append(a.buf, '\n')
	a.flush(true)
	if a.err != nil {
		return nil, a.err
	}
	return JSON(a.out), nil
}

// JSON is an answer's JSON in the chunks it was made in, written as they
// are, never copied into one: the month by pod's 14 MB grown by doubling,
// then copied again into a server's buffer, was a tenth of its time with
// the collector's.
type JSON [][]byte

// WriteTo writes the chunks to w in order.
func (j JSON) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, c := range j {
		m, err := w.Write(c)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// chunkSize is the size of the chunks an answer is made in.
const chunkSize = 1 << 16

// jsonWriter appends indented JSON to buf, setting it aside in out as it
// fills.
type jsonWriter struct {
	buf   []byte
	out   [][]byte
	depth int
	// first: no member or element has been written at this depth yet.
	first bool
	err   error
	// keys are the last entry's keys, sorted.
	keys []string
}

// sameKeys: m's keys are exactly keys.
func sameKeys(keys []string, m map[string]string) bool {
	if len(keys) != len(m) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// flush sets the buffer aside once it is nearly full, or whatever it
// holds, and starts a new one: the answer is never copied as it grows.
func (a *jsonWriter) flush(all bool) {
	if len(a.buf) == 0 || (!all && len(a.buf) < chunkSize-chunkSize/8) {
		return
	}
	a.out = append(a.out, a.buf)
	a.buf = nil // all: what follows, if anything, is a few closing lines
	if !all {
		a.buf = make([]byte, 0, chunkSize)
	}
}

func (a *jsonWriter) newline() {
	a.buf = append(a.buf, '\n')
	for i := 0; i < a.depth; i++ {
		a.buf = append(a.buf, ' ', ' ')
	}
}

// open starts an object or array; close ends it, on its own line unless
// it was empty ("{}", "[]", as the encoder writes them).
func (a *jsonWriter) open(c byte) {
	a.buf = append(a.buf, c)
	a.depth++
	a.first = true
}

func (a *jsonWriter) close(c byte) {
	a.depth--
	if !a.first {
		a.newline()
	}
	a.buf = append(a.buf, c)
	a.first = false
	a.flush(false)
}

// elem starts an array element.
func (a *jsonWriter) elem() {
	if !a.first {
		a.buf = append(a.buf, ',')
	}
	a.first = false
	a.newline()
}

// key starts an object member.
func (a *jsonWriter) key(k string) {
	a.elem()
	a.str(k)
	a.buf = append(a.buf, ':', ' ')
}

// member writes a string member; optMember, unless v is empty (the
// fields marked omitempty).
func (a *jsonWriter) member(k, v string) {
	a.key(k)
	a.str(v)
}

func (a *jsonWriter) optMember(k, v string) {
	if v != "" {
		a.member(k, v)
	}
}

// str writes s quoted as the encoder does: HTML's <, > and & escaped,
// U+2028 and U+2029 escaped, invalid UTF-8 as U+FFFD.
func (a *jsonWriter) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always marshals
			a.buf = append(a.buf, b...)
			return
		}
	}
	a.buf = append(a.buf, '"')
	a.buf = append(a.buf, s...)
	a.buf = append(a.buf, '"')
}

// num writes n as the encoder writes a json.Number: "" as 0, anything
// else that is not a JSON number refused.
func (a *jsonWriter) num(n json.Number) {
	if n == "" {
		n = "0"
	}
	if !validNumber(string(n)) {
		if a.err == nil {
			a.err = fmt.Errorf("cannot write the answer: json: invalid number literal %q", string(n))
		}
		return
	}
	a.buf = append(a.buf, n...)
}

func (a *jsonWriter) strs(vs []string) {
	if vs == nil {
		a.buf = append(a.buf, "null"...)
		return
	}
	a.open('[')
	for _, v := range vs {
		a.elem()
		a.str(v)
	}
	a.close(']')
}

func (a *jsonWriter) result(r *Result) {
	a.open('{')
	a.key("window")
	a.window(&r.Window)
	a.member("currency", r.Currency)
	a.member("policy", r.Policy)
	a.member("idle", r.Idle)
	a.key("aggregate")
	a.strs(r.Aggregate)
	a.optMember("filter", r.Filter)
	a.optMember("step", r.Step)
	a.member("source", r.Source)
	a.key("total")
	a.num(r.Total)
	a.key("sets")
	if r.Sets == nil {
		a.buf = append(a.buf, "null"...)
	} else {
		a.open('[')
		for i := range r.Sets {
			a.elem()
			a.set(&r.Sets[i])
		}
		a.close(']')
	}
	a.close('}')
}

func (a *jsonWriter) window(w *Window) {
	a.open('{')
	a.member("start", w.Start)
	a.member("end", w.End)
	a.member("timezone", w.Timezone)
	a.optMember("data_start", w.DataStart)
	a.optMember("data_end", w.DataEnd)
	a.key("partial")
	a.buf = strconv.AppendBool(a.buf, w.Partial)
	a.optMember("partial_note", w.PartialNote)
	a.close('}')
}

func (a *jsonWriter) set(s *Set) {
	a.open('{')
	a.member("start", s.Start)
	a.member("end", s.End)
	a.key("total")
	a.num(s.Total)
	a.key("entries")
	if s.Entries == nil {
		a.buf = append(a.buf, "null"...)
	} else {
		a.open('[')
		a.entries(s.Entries)
		a.close(']')
	}
	a.close('}')
}

// entries writes es as an array's elements; a large answer's in as many
// parts as there are processors, each into its own buffer, then in
// order.
func (a *jsonWriter) entries(es []Entry) {
	parts := min(runtime.GOMAXPROCS(0), len(es)/minEntriesPerPart+1)
	if parts == 1 {
		for i := range es {
			a.elem()
			a.entry(&es[i])
		}
		return
	}
	ws := make([]jsonWriter, parts)
	var wg sync.WaitGroup
	for p := range ws {
		// A part starts where the array is: its first element after a
		// comma unless it is the array's first.
		ws[p] = jsonWriter{buf: make([]byte, 0, chunkSize), depth: a.depth, first: a.first && p == 0}
		wg.Go(func() {
			for i := len(es) * p / parts; i < len(es)*(p+1)/parts; i++ {
				ws[p].elem()
				ws[p].entry(&es[i])
			}
		})
	}
	wg.Wait()
	a.flush(true)
	for p := range ws {
		if a.err == nil {
			a.err = ws[p].err
		}
		ws[p].flush(true)
		a.out = append(a.out, ws[p].out...)
	}
	a.first = false
}

func (a *jsonWriter) entry(e *Entry) {
	a.open('{')
	a.member("name", e.Name)
	a.key("keys")
	if e.Keys == nil {
		a.buf = append(a.buf, "null"...)
	} else {
		// The encoder sorts a map's keys; the entries of an answer mostly
		// have the same ones, sorted once.
		if !sameKeys(a.keys, e.Keys) {
			a.keys = slices.Sorted(maps.Keys(e.Keys))
		}
		a.open('{')
		for _, k := range a.keys {
			a.member(k, e.Keys[k])
		}
		a.close('}')
	}
	for _, m := range [...]struct {
		k string
		v json.Number
	}{{"held_gpu_hours", e.HeldHours}, {"used_gpu_hours", e.UsedHours}, {"idle_gpu_hours", e.IdleHours}} {
		a.key(m.k)
		a.num(m.v)
	}
	a.key("efficiency")
	if e.Efficiency == nil {
		a.buf = append(a.buf, "null"...)
	} else {
		a.num(*e.Efficiency)
	}
	for _, m := range [...]struct {
		k string
		v json.Number
	}{
		{"idle_share_gpu_hours", e.IdleShareHours}, {"memory_mib_hours", e.MemoryMiBHours}, {"energy_kwh", e.EnergyKWh},
		{"charge", e.Charge}, {"idle_share", e.IdleShare}, {"platform", e.Platform}, {"rounding", e.Rounding}, {"total", e.Total},
	} {
		a.key(m.k)
		a.num(m.v)
	}
	a.close('}')
}

// validNumber: s is a JSON number, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
// as the encoder checks a json.Number (TestValidNumberIsJSONs).
func validNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
