package cli

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/sizing"
)

// writeSizeReport prints a size report as tables, findings and the
// recommendation with its arithmetic.
func writeSizeReport(w io.Writer, rep *sizing.Report) error {
	if rep.FromPlan {
		fmt.Fprintf(w, "Plan %s (estimates)\n", rep.Source)
	} else {
		fmt.Fprintf(w, "Savepoint %s, TTL ages at %s\n", rep.Source, formatTime(int64(rep.Now)))
	}
	if rep.Basis != "" {
		fmt.Fprintf(w, "  figures: %s\n", rep.Basis)
	} else if o := rep.HeapOverhead; o != nil {
		fmt.Fprintf(w, "  heap: %s × the serialized bytes (the plan's heapOverhead)\n", factors(*o))
	} else {
		fmt.Fprintln(w, "  heap: stateproc's model of the heap backend's live Go objects")
	}
	for _, table := range []func(io.Writer, *sizing.Report) error{
		sizeStateTable, sizeEntryTable, sizeSubtaskTables, sizeSlotTable, sizeAgeTable, sizeTimerTable,
	} {
		if err := table(w, rep); err != nil {
			return err
		}
	}
	writeFindings(w, rep)
	writeRecommendation(w, rep)
	return nil
}

func sizeStateTable(w io.Writer, rep *sizing.Report) error {
	s := section(w, "State sizes", "OPERATOR", "STATE", "KIND", "KEYS", "ENTRIES", "SAVEPOINT", "HEAP", "PEBBLE")
	for _, op := range rep.Operators {
		for _, st := range op.States {
			keys := count(st.Keys)
			if st.Kind == "timers" {
				keys = "-"
			}
			s.add(op.UID, st.Name, st.Kind, keys, count(st.Entries), humanBytes(st.Savepoint), byteRange(st.Heap),
				humanBytes(st.Pebble)+" ("+st.PebbleFrom+")")
		}
	}
	t := rep.Total
	s.add("total", "", "", "", "", humanBytes(t.Savepoint), byteRange(t.Heap), humanBytes(t.Pebble))
	return s.render()
}

func sizeEntryTable(w io.Writer, rep *sizing.Report) error {
	s := section(w, "Bytes per entry: savepoint format (key and namespace once per record), heap (besides the cost of a key group), Pebble",
		"OPERATOR", "STATE", "KEY", "NAMESPACE", "MAP KEY", "VALUE", "TTL", "FRAMING", "TOTAL", "HEAP", "PEBBLE", "SAMPLE")
	var sampled bool
	for _, op := range rep.Operators {
		for _, st := range op.States {
			if st.Entries == 0 {
				s.add(op.UID, st.Name, "-", "-", "-", "-", "-", "-", "-", "-", "-", sampleText(st.Sample))
				continue
			}
			b := st.PerEntry
			// A plan that gives bytes per entry gives only the total.
			parts := []any{"-", "-", "-", "-", "-", "-"}
			if b.Key+b.Namespace+b.MapKey+b.Value+b.TTL+b.Framing > 0 {
				parts = []any{perEntry(b.Key), perEntry(b.Namespace), perEntry(b.MapKey), perEntry(b.Value), perEntry(b.TTL), perEntry(b.Framing)}
			}
			row := append([]any{op.UID, st.Name}, parts...)
			s.add(append(row, perEntry(b.Total), rangeText(st.HeapPerEntry.Low, st.HeapPerEntry.High, perEntry),
				perEntry(st.Pebble/st.Entries), sampleText(st.Sample))...)
			sampled = sampled || !st.Sample.Complete()
		}
	}
	if err := s.render(); err != nil {
		return err
	}
	if sampled {
		fmt.Fprintln(w, "A state read in part is measured on its first key groups and scaled up; --sample 0 reads everything.")
	}
	return nil
}

// The subtask tables list every subtask up to this many; beyond, the
// busiest ones and the least busy one.
const maxSubtaskRows = 16

func sizeSubtaskTables(w io.Writer, rep *sizing.Report) error {
	for _, op := range rep.Operators {
		subs := op.Subtasks
		var mean float64
		for _, st := range subs {
			mean += st.Savepoint
		}
		mean /= float64(len(subs))
		title := fmt.Sprintf("Subtasks of %s at parallelism %d, max parallelism %d", op.UID, op.Parallelism, op.MaxParallelism)
		busiest := slices.MaxFunc(subs, func(a, b sizing.SubtaskReport) int { return cmp.Compare(a.Savepoint, b.Savepoint) })
		if mean > 0 {
			title += fmt.Sprintf(" (busiest %.2f× the mean)", busiest.Savepoint/mean)
		}
		shown := subs
		if len(subs) > maxSubtaskRows {
			shown = slices.Clone(subs)
			slices.SortStableFunc(shown, func(a, b sizing.SubtaskReport) int { return cmp.Compare(b.Savepoint, a.Savepoint) })
			shown = append(shown[:3:3], shown[len(shown)-1])
			title += fmt.Sprintf(", the 3 busiest and the least busy of %d", len(subs))
		}
		s := section(w, title, "SUBTASK", "KEY GROUPS", "SAVEPOINT", "HEAP", "PEBBLE")
		for _, st := range shown {
			s.add(st.Subtask, st.KeyGroups, humanBytes(st.Savepoint), byteRange(st.Heap), humanBytes(st.Pebble))
		}
		if err := s.render(); err != nil {
			return err
		}
	}
	return nil
}

// sizeSlotTable adds up the operators per task slot, when there are
// several operators to add.
func sizeSlotTable(w io.Writer, rep *sizing.Report) error {
	if len(rep.Operators) < 2 {
		return nil
	}
	s := section(w, "Task slots (subtask i of every operator)", "SLOT", "SAVEPOINT", "HEAP", "PEBBLE")
	for _, sl := range rep.Slots {
		s.add(sl.Slot, humanBytes(sl.Savepoint), byteRange(sl.Heap), humanBytes(sl.Pebble))
	}
	return s.render()
}

func sizeAgeTable(w io.Writer, rep *sizing.Report) error {
	s := section(w, "TTL ages at "+formatTime(int64(rep.Now))+" (share of the TTL)", "OPERATOR", "STATE", "TTL",
		"0-25%", "25-50%", "50-75%", "75-100%", "100-200%", ">=200%", "FUTURE", "PAST TTL")
	for _, op := range rep.Operators {
		for _, st := range op.States {
			a := st.Age
			if a == nil {
				continue
			}
			row := []any{op.UID, st.Name, jsonvalue.Duration(a.TTLMillis)}
			for _, b := range a.Buckets {
				row = append(row, count(b))
			}
			s.add(append(row, count(a.Future), count(a.Expired))...)
		}
	}
	return s.render()
}

func sizeTimerTable(w io.Writer, rep *sizing.Report) error {
	s := section(w, "Timers per (key, namespace); the earliest and the latest after the job's time at the savepoint (event time: the watermark, processing time: the creation time) where it is recorded",
		"OPERATOR", "TIMER SERVICE", "TIMERS", "KEYS", "MAX PER KEY", "KEYS WITH MORE THAN ONE", "WIDEST SPREAD", "JOB'S TIME", "EARLIEST", "LATEST")
	for _, op := range rep.Operators {
		for _, st := range op.States {
			t := st.Timers
			if t == nil || t.Timers == 0 {
				continue
			}
			at, earliest, latest := "-", formatTime(int64(t.Earliest)), formatTime(int64(t.Latest))
			if t.Time != nil {
				at, earliest, latest = formatTime(int64(*t.Time)), offset(int64(t.Earliest), int64(*t.Time)), offset(int64(t.Latest), int64(*t.Time))
			}
			s.add(op.UID, st.Name, count(t.Timers), count(t.Keys), t.MaxPerKey, count(t.AboveOne), jsonvalue.Duration(t.MaxSpreadMillis),
				at, earliest, latest)
		}
	}
	return s.render()
}

// offset renders t as a signed duration after from, +5m or -2d, without
// overflow at the ends of time.
func offset(t, from int64) string {
	if t >= from {
		return "+" + jsonvalue.Duration(int64(min(uint64(t)-uint64(from), math.MaxInt64)))
	}
	return "-" + jsonvalue.Duration(int64(min(uint64(from)-uint64(t), math.MaxInt64)))
}

// jobTime names the job's time that a timer finding is set against.
func jobTime(t *sizing.TimerStats) string {
	if t.Domain == sizing.EventTime {
		return "the watermark " + formatTime(int64(*t.Time))
	}
	return "the savepoint's creation time " + formatTime(int64(*t.Time))
}

func writeFindings(w io.Writer, rep *sizing.Report) {
	if len(rep.Findings) == 0 {
		return
	}
	fmt.Fprintf(w, "\nUnbounded growth\n")
	for _, f := range rep.Findings {
		about := ""
		if f.Estimated {
			about = "about "
		}
		where := f.Operator + "/" + f.State
		switch f.Kind {
		case sizing.FindingPastTTL:
			fmt.Fprintf(w, "  ! %s: %s%s of %s entries (%s, %s) are past their TTL and still stored: nothing has read them, ",
				where, about, count(f.Count), count(f.Of), percent(f.Count/f.Of), humanBytes(f.Bytes))
			if len(f.Cleanup) == 0 {
				fmt.Fprintf(w, "and only cleanup on read is configured, so they stay forever (a leak): configure cleanup or clear the state when its key's lifecycle ends\n")
			} else {
				fmt.Fprintf(w, "and the configured cleanup (%s) has not reached them yet\n", strings.Join(f.Cleanup, ", "))
			}
		case sizing.FindingTimerLeak:
			fmt.Fprintf(w, "  ! %s: %s%s of %s keys hold %d or more timers spread over more than %s (up to %d on a key, the widest over %s): they pile up, "+
				"as when each event registers a timer far ahead and none is deleted, or the watermark stands still while records register timers; a possible timer leak\n",
				where, about, count(f.Count), count(f.Of), sizing.PileUpTimers, jsonvalue.Duration(sizing.TimerHorizon), f.MaxPerKey,
				jsonvalue.Duration(f.Timers.MaxSpreadMillis))
		case sizing.FindingTimersOverdue:
			fmt.Fprintf(w, "  ! %s: %s%s of %s timers lie more than %s before %s (the earliest at %s): a timer that its clock has passed fires when the clock next advances, "+
				"so these were registered in the past and the clock has not moved on since; they wait for good, a possible timer leak\n",
				where, about, count(f.Count), count(f.Of), jsonvalue.Duration(sizing.TimerHorizon), jobTime(f.Timers), formatTime(int64(f.Timers.Earliest)))
		case sizing.FindingValueCollection:
			fmt.Fprintf(w, "  ! %s: a value state holding whole lists or maps: on Pebble every update re-serializes the collection; use a list or map state\n", where)
		case sizing.FindingNoTTLCollection:
			fmt.Fprintf(w, "  ! %s: a collection without TTL grows with every element or map key a key ever adds, unless the job clears it\n", where)
		}
	}
}

func writeRecommendation(w io.Writer, rep *sizing.Report) {
	r := rep.Recommendation
	c := rep.Checkpoints
	per := "per slot"
	if len(rep.Operators) == 1 {
		per = "per subtask"
	}
	fmt.Fprintf(w, "\nRecommendation: %s\n", r.Backend)
	verdict := "fits"
	if !r.HeapFits {
		verdict = "does not fit"
	}
	fmt.Fprintf(w, "  heap needs %s per slot (%s with the collector's headroom at GOGC=%d) against a budget of --memory-per-slot %s: %s\n",
		byteRange(r.HeapPerSlot), byteRange(r.HeapNeeded), r.GOGC, humanBytes(r.MemoryPerSlot), verdict)
	fmt.Fprintf(w, "  Pebble %s %s on disk\n", humanBytes(r.PebblePerSlot), per)
	limit := "within"
	if r.FullTooLarge {
		limit = "above"
	}
	fmt.Fprintf(w, "  every full checkpoint writes %s (%s from the busiest slot, %s --full-checkpoint-limit %s); on the heap every checkpoint is full\n",
		humanBytes(c.Full), humanBytes(r.FullPerSlot), limit, humanBytes(r.FullCheckpointLimit))
	fmt.Fprintf(w, "  an incremental Pebble checkpoint writes about %s: %s of the entries (--change-rate) at Pebble's %s, plus compaction output\n",
		humanBytes(c.Incremental), percent(c.ChangeRate), humanBytes(rep.Total.Pebble))
	switch {
	case r.Backend == "heap":
		fmt.Fprintf(w, "  → heap: it fits, and it reads and writes state without serializing it\n")
	case !r.HeapFits:
		fmt.Fprintf(w, "  → Pebble with incremental checkpoints: the heap does not fit\n")
	default:
		fmt.Fprintf(w, "  → Pebble with incremental checkpoints: the heap fits, but each of its checkpoints writes everything\n")
	}
}

// count renders a number of keys or entries, rounded, with thousands
// separators.
func count(f float64) string {
	s := strconv.FormatFloat(math.Round(f), 'f', 0, 64)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func percent(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strings.TrimSuffix(strconv.FormatFloat(100*f, 'f', 1, 64), ".0") + "%"
}

// perEntry renders bytes per entry to a tenth of a byte.
func perEntry(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func byteRange(r sizing.Range) string { return rangeText(r.Low, r.High, humanBytes) }

// rangeText renders a low–high range, or one value when both are the same
// as rendered; a shared unit is written once.
func rangeText(low, high float64, format func(float64) string) string {
	l, h := format(low), format(high)
	if l == h {
		return l
	}
	if i, j := strings.LastIndexByte(l, ' '), strings.LastIndexByte(h, ' '); i > 0 && j > 0 && l[i:] == h[j:] {
		return l[:i] + "–" + h
	}
	return l + "–" + h
}

func factors(r sizing.Range) string {
	return rangeText(r.Low, r.High, func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

func sampleText(s *sizing.Sample) string {
	switch {
	case s == nil:
		return "-"
	case s.Complete():
		return "all"
	}
	return fmt.Sprintf("%d of %d key groups", s.KeyGroups, s.WithData)
}
