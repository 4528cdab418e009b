package exposition

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrapeHandler serves /metrics. For the text formats it writes the
// snapshot's families itself, from label text rendered once per series
// lifetime, so a scrape costs little more than copying its bytes; the Go
// and process families come from a small registry and are encoded by
// expfmt in between, keeping every family in name order as promhttp does.
// Everything else (the protobuf formats) goes to promhttp over the full
// registry, which builds the same series from the same snapshot.
//
// Negotiation, headers, the name[] filter and the choice of compression
// follow promhttp, so a scraper cannot tell the two paths apart except by
// speed and the gzip level (BestSpeed here: on a dense node the default
// level would cost more than writing the text).
type scrapeHandler struct {
	e       *Exporter
	runtime prometheus.Gatherer // the Go and process collectors only
	slow    http.Handler        // promhttp over the full registry
	formats []expfmt.Format     // what promhttp offers with OpenMetrics enabled

	// Free lists rather than sync.Pools: a pool is emptied by every GC,
	// and on a busy collector a GC between two scrapes is the rule, so a
	// pool would hand out a fresh 1.5 MB buffer and gzip state nearly
	// every time. A free list keeps up to freeListSize of each for good.
	bufs     chan *scrapeBuffer
	gzips    chan *gzip.Writer
	sizeHint atomic.Int64 // size of the last body, to size a new buffer
}

// freeListSize is how many buffers and gzip writers are kept for reuse:
// enough for Prometheus HA pairs scraping at the same moment.
const freeListSize = 4

var _ http.Handler = (*scrapeHandler)(nil)

func newScrapeHandler(e *Exporter, runtime, full prometheus.Gatherer) *scrapeHandler {
	return &scrapeHandler{
		e:       e,
		runtime: runtime,
		slow: promhttp.HandlerFor(full, promhttp.HandlerOpts{
			EnableOpenMetrics: true,
			ErrorLog:          promLogger{e.log},
		}),
		formats: expfmt.DefaultOpenMetricsAcceptedFormats(),
		bufs:    make(chan *scrapeBuffer, freeListSize),
		gzips:   make(chan *gzip.Writer, freeListSize),
	}
}

func (h *scrapeHandler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	format := expfmt.NegotiateAccept(req.Header, h.formats...)
	om, ok := textFormat(format)
	if !ok {
		h.slow.ServeHTTP(rsp, req)
		return
	}
	buf := h.getBuffer()
	defer h.putBuffer(buf)
	h.render(buf, format, om, nameFilter(req))

	hdr := rsp.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(format))
	if !acceptsGzip(req.Header) {
		hdr.Set("Content-Length", strconv.Itoa(len(buf.b)))
		if _, err := rsp.Write(buf.b); err != nil {
			h.e.log.Debug("cannot write metrics", "err", err)
		}
		return
	}
	hdr.Set("Content-Encoding", "gzip")
	gz := h.getGzip(rsp)
	_, err := gz.Write(buf.b)
	if cerr := gz.Close(); err == nil {
		err = cerr
	}
	h.putGzip(gz)
	if err != nil {
		h.e.log.Debug("cannot write metrics", "err", err)
	}
}

// textFormat says whether format is one the handler writes itself, and
// whether it is OpenMetrics. expfmt writes OpenMetrics 0.0.1 and 1.0.0 the
// same way; the escaping parameter changes nothing here because every name
// the Exporter and the runtime collectors use is a legacy name, which no
// escaping scheme touches.
func textFormat(format expfmt.Format) (om, ok bool) {
	f := string(format)
	switch {
	case strings.HasPrefix(f, string(expfmt.FmtText)):
		return false, true
	case strings.HasPrefix(f, string(expfmt.FmtOpenMetrics_1_0_0)),
		strings.HasPrefix(f, string(expfmt.FmtOpenMetrics_0_0_1)):
		return true, true
	}
	return false, false
}

// render writes the body: the snapshot's families and the runtime families
// merged in name order, then the OpenMetrics EOF line where it applies.
func (h *scrapeHandler) render(buf *scrapeBuffer, format expfmt.Format, om bool, keep map[string]struct{}) {
	snap := h.e.snap.Load()
	mfs, err := h.runtime.Gather()
	if err != nil {
		// Whatever was gathered is valid; the Exporter's own series do
		// not depend on the runtime collectors, so they are still served.
		h.e.log.Warn("cannot gather Go and process metrics", "err", err)
	}
	enc := expfmt.NewEncoder(buf, format)
	encode := func(mf *dto.MetricFamily) {
		if !wanted(keep, mf.GetName()) {
			return
		}
		if err := enc.Encode(mf); err != nil {
			h.e.log.Warn("cannot encode metric family", "family", mf.GetName(), "err", err)
		}
	}
	i := 0
	for k := range snap.families {
		fs := &snap.families[k]
		for ; i < len(mfs) && mfs[i].GetName() < fs.f.name; i++ {
			encode(mfs[i])
		}
		if wanted(keep, fs.f.name) {
			buf.b = appendFamily(buf.b, fs, om)
		}
	}
	for ; i < len(mfs); i++ {
		encode(mfs[i])
	}
	if c, ok := enc.(expfmt.Closer); ok {
		_ = c.Close() // writes # EOF for OpenMetrics; cannot fail on a buffer
	}
}

// nameFilter returns the family names a scrape asked for with name[]
// parameters, as promhttp supports, or nil for all.
func nameFilter(req *http.Request) map[string]struct{} {
	if req.URL == nil || !strings.Contains(req.URL.RawQuery, "name") {
		return nil
	}
	names := req.URL.Query()["name[]"]
	if len(names) == 0 {
		return nil
	}
	keep := make(map[string]struct{}, len(names))
	for _, n := range names {
		keep[n] = struct{}{}
	}
	return keep
}

func wanted(keep map[string]struct{}, name string) bool {
	if keep == nil {
		return true
	}
	_, ok := keep[name]
	return ok
}

// getBuffer returns an empty body buffer, sized after the last body when
// the free list has none.
func (h *scrapeHandler) getBuffer() *scrapeBuffer {
	select {
	case b := <-h.bufs:
		return b
	default:
		n := h.sizeHint.Load()
		return &scrapeBuffer{b: make([]byte, 0, n+n/8)}
	}
}

// putBuffer keeps a buffer for the next scrape, unless the free list is
// full or the exposition has shrunk so much that keeping it would only
// hold memory.
func (h *scrapeHandler) putBuffer(b *scrapeBuffer) {
	n := len(b.b)
	h.sizeHint.Store(int64(n))
	if cap(b.b) > 1<<20 && cap(b.b) > 4*n {
		return
	}
	b.b = b.b[:0]
	select {
	case h.bufs <- b:
	default:
	}
}

// getGzip returns a gzip writer at BestSpeed writing to w.
func (h *scrapeHandler) getGzip(w io.Writer) *gzip.Writer {
	select {
	case gz := <-h.gzips:
		gz.Reset(w)
		return gz
	default:
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level never fails
		return gz
	}
}

// putGzip keeps a closed gzip writer for the next scrape.
func (h *scrapeHandler) putGzip(gz *gzip.Writer) {
	gz.Reset(io.Discard) // do not hold on to the response
	select {
	case h.gzips <- gz:
	default:
	}
}

// acceptsGzip chooses the content coding as promhttp does: the best of
// identity and gzip by the q-values of Accept-Encoding, identity on a tie,
// and identity when nothing matches.
func acceptsGzip(hdr http.Header) bool {
	best, bestQ := "identity", -1.0
	for _, offer := range [...]string{"identity", "gzip"} {
		for _, line := range hdr.Values("Accept-Encoding") {
			for part := range strings.SplitSeq(line, ",") {
				coding, q, ok := parseCoding(part)
				if ok && q > bestQ && (coding == "*" || coding == offer) {
					best, bestQ = offer, q
				}
			}
		}
	}
	return best == "gzip" && bestQ > 0
}

// parseCoding parses one `coding[;q=value]` element of Accept-Encoding.
func parseCoding(s string) (coding string, q float64, ok bool) {
	coding, params, _ := strings.Cut(s, ";")
	coding = strings.TrimSpace(coding)
	if coding == "" {
		return "", 0, false
	}
	params = strings.TrimSpace(params)
	if params == "" {
		return coding, 1, true
	}
	v, found := strings.CutPrefix(params, "q=")
	if !found {
		return "", 0, false
	}
	q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || q < 0 || q > 1 {
		return "", 0, false
	}
	return coding, q, true
}
