package advicereport

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuledger/gpuledger/advisor/advise"
	"github.com/gpuledger/gpuledger/billing/report"
)

// kindCounts names how many actions of each kind there are, in the
// order the advisor ranks kinds: "2 reclaim, 1 consolidate".
func kindCounts(actions []advise.Recommendation) string {
	var parts []string
	for _, k := range []advise.Kind{advise.Reclaim, advise.RightSize, advise.Consolidate} {
		n := 0
		for _, r := range actions {
			if r.Kind == k {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// plural writes n and the noun, with an s when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// contentionText says what the replay of the observed use on the
// proposed layout found, with what each number is. For a reclaim the
// minutes over capacity are use the release would have lost.
func contentionText(r advise.Recommendation) string {
	c := r.Contention
	if c.Of == 0 {
		return "no minutes to replay"
	}
	if c.Minutes == 0 {
		return fmt.Sprintf("the observed use fits the proposed layout in all %d minutes replayed", c.Of)
	}
	what := "use that would have waited for capacity"
	if r.Kind == advise.Reclaim {
		what = "use the release would have lost"
	}
	return fmt.Sprintf("the observed use exceeds the proposed layout in %d of %d minutes replayed (%s), by %.3f GPU on average, %.3f at most",
		c.Minutes, c.Of, what, c.MeanExcess, c.MaxExcess)
}

// contentionShort is contentionText for a table cell whose heading
// says what the minutes are.
func contentionShort(r advise.Recommendation) string {
	c := r.Contention
	if c.Minutes == 0 {
		return fmt.Sprintf("none of %d minutes", c.Of)
	}
	what := "use that would have waited"
	if r.Kind == advise.Reclaim {
		what = "use the release would have lost"
	}
	return fmt.Sprintf("%d of %d minutes (%s), by %.3f GPU on average, %.3f at most", c.Minutes, c.Of, what, c.MeanExcess, c.MaxExcess)
}

// latencyText is the predicted latency, or why there is none.
func latencyText(r advise.Recommendation) string {
	if l := r.Latency; l != nil {
		return fmt.Sprintf("predicted p50 %s ms, p99 %s ms, %.2f%% of requests served (%s)", MS(l.P50), MS(l.P99), 100*l.ServedFraction, r.LatencyNote)
	}
	return r.LatencyNote
}

// WriteText writes the advice for a terminal: the actions first, each
// with what it changes and saves; the workloads kept as they are one line
// each after them.
func WriteText(w io.Writer, a *Advice) error {
	p, rep := a.Plan, a.Report
	cur := p.Currency.Code
	actions, kept := a.Actions()
	fmt.Fprintf(w, "GPU sharing advice for %s", rep.PeriodLabel())
	if note := rep.PartialNote(); note != "" {
		fmt.Fprintf(w, " (%s; not the whole period's advice)", note)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s saving %s %s over the period", plural(len(actions), "action"), rep.Money(p.SavingMinor), cur)
	if len(actions) > 0 {
		fmt.Fprintf(w, " (%s)", kindCounts(actions))
	}
	fmt.Fprintf(w, "; %s kept as they are\n", plural(len(kept), "workload"))
	released, moved := a.split(actions)
	fmt.Fprintf(w, "of the saving: capacity released %s %s (whole GPUs freed: money the company stops spending), cost that moves between teams %s %s\n",
		rep.Money(released), cur, rep.Money(moved), cur)
	fmt.Fprintf(w, "chargeback: total %s %s, of which charge lines %s; the advised workloads held %s GPU-hours, %s %s at the book's rates (policy %s)\n",
		rep.Money(rep.Total), cur, rep.Money(a.Charges), p.HeldHours.FloatString(3), rep.Money(p.ChargedMinor), cur, rep.Book.Policy)
	if len(actions) > 0 {
		fmt.Fprintln(w, "\nActions, largest saving first")
	}
	for i, r := range actions {
		fmt.Fprintf(w, "\n%d. %s  %s  [team %s, %s]\n", i+1, strings.ToUpper(string(r.Kind)), strings.Join(r.Workloads, ", "), r.Team, r.Model)
		fmt.Fprintf(w, "   now:        %s\n   proposed:   %s\n", r.Before, r.After)
		fmt.Fprintf(w, "   saving:     %s %s: %s of the %s GPU-hours held freed, at %s %s per GPU-hour\n",
			rep.Money(r.SavingMinor), cur, r.SavedHours.FloatString(3), r.HeldHours.FloatString(3), r.Rate.Format(p.Currency.MinorUnit), cur)
		rel, mov := report.SplitSaving(r.SavingMinor, r.BeforeGPUs, r.AfterGPUs)
		fmt.Fprintf(w, "   of which:   capacity released %s %s, cost that moves between teams %s %s\n", rep.Money(rel), cur, rep.Money(mov), cur)
		fmt.Fprintf(w, "   replayed:   %s\n", contentionText(r))
		fmt.Fprintf(w, "   latency:    %s\n", latencyText(r))
		for _, e := range r.Evidence {
			fmt.Fprintf(w, "   - %s\n", e)
		}
		for _, e := range r.Incomplete {
			fmt.Fprintf(w, "   ! incomplete: %s\n", e)
		}
	}
	if len(kept) > 0 {
		fmt.Fprintf(w, "\nKept as they are (%d): already sized to their use\n", len(kept))
		for _, r := range kept {
			why := ""
			if len(r.Evidence) > 0 {
				why = ": " + r.Evidence[0]
			}
			fmt.Fprintf(w, "   %s [team %s, %s, %s GPU-hours held]%s\n", strings.Join(r.Workloads, ", "), r.Team, r.Model, r.HeldHours.FloatString(3), why)
			for _, e := range r.Incomplete {
				fmt.Fprintf(w, "   ! incomplete: %s\n", e)
			}
		}
	}
	if len(p.MIG) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range p.MIG {
		fmt.Fprintf(w, "MIG instances proposed on %s: %d (%d slices), at least %d GPU(s); MIG instances of different teams may share a GPU\n", m.Model, m.Instances, m.Slices, m.GPUs)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(w, "problem: %s\n", pr)
	}
	return nil
}
