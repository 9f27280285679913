package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
)

// writeInspectTables prints the report as titled tables, leaving out
// sections that have no rows.
func writeInspectTables(w io.Writer, rep *inspect.Report) error {
	sp := rep.Savepoint
	created := "created " + formatTime(int64(sp.Created))
	if sp.Created == 0 {
		// The epoch: the layout does not record when (Apache Flink's).
		created = "creation time not recorded"
	}
	fmt.Fprintf(w, "Savepoint %s\n  %s, id %d, %s\n", sp.Path, sp.Layout, sp.ID, created)
	for _, l := range sp.Lineage {
		fmt.Fprintf(w, "  lineage: %s\n", l)
	}
	if rep.BytesRead != nil {
		fmt.Fprintf(w, "  read %s\n", humanBytes(float64(*rep.BytesRead)))
	}
	r := (*inspectTables)(rep)
	sections := []func(io.Writer) error{
		r.operatorTable, r.stateTable, r.sizeTable, r.ttlTable, r.ageTable,
		r.timerTable, r.operatorStateTable, r.hotKeyTables, r.noteList,
	}
	for _, s := range sections {
		if err := s(w); err != nil {
			return err
		}
	}
	return nil
}

// inspectTables renders the sections of an inspect report.
type inspectTables inspect.Report

func section(w io.Writer, title string, header ...any) *tableSection {
	return &tableSection{w: w, title: title, header: header}
}

// tableSection buffers rows so that a section without any prints nothing.
type tableSection struct {
	w      io.Writer
	title  string
	header []any
	rows   [][]any
}

func (s *tableSection) add(cells ...any) { s.rows = append(s.rows, cells) }

func (s *tableSection) render() error {
	if len(s.rows) == 0 {
		return nil
	}
	fmt.Fprintf(s.w, "\n%s\n", s.title)
	// The headers are written as they should read: the formatting of
	// headers would turn P50 into "P 50" and 0-25% into "0 - 25 %".
	t := newTable(s.w, s.header...)
	t.rawHeader = true
	for _, r := range s.rows {
		t.Append(r...)
	}
	return t.Render()
}

func (rep *inspectTables) operatorTable(w io.Writer) error {
	header := []any{"UID", "NAME", "PARALLELISM", "MAX PARALLELISM", "KEY", "BYTES", "ON DISK"}
	withID := false
	for _, o := range rep.Operators {
		withID = withID || o.ID != ""
	}
	if withID {
		header = append(header[:2], append([]any{"ID"}, header[2:]...)...)
	}
	s := section(w, "Operators", header...)
	for _, o := range rep.Operators {
		row := []any{o.UID, o.Name, o.Parallelism, o.MaxParallelism, orDash(o.KeyType), humanBytes(float64(o.Bytes)), humanBytes(float64(o.StoredBytes))}
		if withID {
			row = append(row[:2], append([]any{orDash(o.ID)}, row[2:]...)...)
		}
		s.add(row...)
	}
	return s.render()
}

// noteList prints what the savepoint holds that is not read, and the
// bytes that could not be walked.
func (rep *inspectTables) noteList(w io.Writer) error {
	var lines []string
	for _, n := range rep.Savepoint.Notes {
		lines = append(lines, n)
	}
	for _, o := range rep.Operators {
		for _, u := range o.Unread {
			lines = append(lines, fmt.Sprintf("operator %s: NOT READ: %s", o.UID, u))
		}
		for _, n := range o.Notes {
			lines = append(lines, fmt.Sprintf("operator %s: %s", o.UID, n))
		}
	}
	for _, st := range rep.States {
		for _, n := range st.Notes {
			lines = append(lines, fmt.Sprintf("operator %s state %s: %s", st.Operator, st.Name, n))
		}
	}
	for _, wi := range rep.Warnings {
		lines = append(lines, "opaque: "+warningText(wi))
	}
	if !rep.Scanned && slices.ContainsFunc(rep.States, func(st inspect.StateInfo) bool { return st.NeedsScan && st.Entries > 0 }) {
		lines = append(lines, "value sizes and TTL ages need --scan: the index of this savepoint does not record their histograms")
	}
	if len(lines) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nNotes")
	for _, l := range lines {
		fmt.Fprintf(w, "  - %s\n", l)
	}
	return nil
}

func (rep *inspectTables) stateTable(w io.Writer) error {
	s := section(w, "Keyed states", "OPERATOR", "STATE", "KIND", "KEY", "NAMESPACE", "VALUE", "TTL")
	for _, st := range rep.States {
		value := st.ValueType
		if st.MapKeyType != "" {
			value = st.MapKeyType + " -> " + st.ValueType
		}
		ttl := "-"
		if st.TTL != nil {
			ttl = st.TTL.TTL
		}
		s.add(st.Operator, st.Name, st.Kind, st.KeyType, st.NamespaceType, value, ttl)
	}
	return s.render()
}

func (rep *inspectTables) sizeTable(w io.Writer) error {
	s := section(w, "State sizes", "OPERATOR", "STATE", "KEYS", "ENTRIES", "BYTES", "BYTES/ENTRY",
		"VALUE P50", "VALUE P99", "VALUE MAX", "KEY GROUPS", "SKEW")
	for _, st := range rep.States {
		p50, p99, pmax := "-", "-", "-"
		switch v := st.IndexValueSize; {
		case st.ValueSize != nil:
			p50, p99, pmax = strconv.Itoa(st.ValueSize.P50), strconv.Itoa(st.ValueSize.P99), strconv.Itoa(st.ValueSize.Max)
		case v != nil:
			p50, p99, pmax = sizeRangeText(v.P50), sizeRangeText(v.P99), sizeRangeText(v.Max)
		}
		s.add(st.Operator, st.Name, st.Keys, st.Entries, humanBytes(float64(st.Bytes)),
			fmt.Sprintf("%.1f", st.BytesPerEntry), p50, p99, pmax, st.KeyGroups, fmt.Sprintf("%.2f", st.Skew))
	}
	return s.render()
}

func (rep *inspectTables) ttlTable(w io.Writer) error {
	s := section(w, "TTL", "OPERATOR", "STATE", "TTL", "UPDATE", "VISIBILITY", "CLEANUP", "OLDEST MODIFIED", "NEWEST MODIFIED")
	for _, st := range rep.States {
		t := st.TTL
		if t == nil {
			continue
		}
		var cleanup []string
		if t.CleanupFullSnapshot {
			cleanup = append(cleanup, "full snapshot")
		}
		if t.CleanupIncremental > 0 {
			cleanup = append(cleanup, fmt.Sprintf("incremental %d", t.CleanupIncremental))
		}
		if t.SweepBudget > 0 {
			cleanup = append(cleanup, fmt.Sprintf("sweep %d", t.SweepBudget))
		}
		s.add(st.Operator, st.Name, t.TTL, t.Update, t.Visibility, orDash(strings.Join(cleanup, ", ")),
			optTime(t.OldestModified), optTime(t.NewestModified))
	}
	return s.render()
}

func (rep *inspectTables) ageTable(w io.Writer) error {
	header := []any{"OPERATOR", "STATE", "TTL", "0-25%", "25-50%", "50-75%", "75-100%", "100-200%", ">=200%", "FUTURE", "EXPIRED"}
	s := section(w, "TTL ages at "+formatTime(int64(rep.Now))+" (share of the TTL)", header...)
	// Without a scan, from the index's histograms: a count is a range
	// where a bucket straddles a cut.
	idx := section(w, "TTL ages at "+formatTime(int64(rep.Now))+" (share of the TTL), from the index: min-max where a histogram bucket straddles a cut", header...)
	for _, st := range rep.States {
		row := []any{st.Operator, st.Name, orDash(ttlText(st.TTL))}
		switch a := st.IndexAges; {
		case st.Ages != nil:
			for _, b := range st.Ages.Buckets {
				row = append(row, b.Entries)
			}
			s.add(append(row, st.Ages.Future, st.Ages.Expired)...)
		case a != nil:
			for _, b := range a.Buckets {
				row = append(row, countRangeText(b.Entries))
			}
			idx.add(append(row, countRangeText(a.Future), countRangeText(a.Expired))...)
		}
	}
	if err := s.render(); err != nil {
		return err
	}
	return idx.render()
}

func ttlText(t *inspect.TTLInfo) string {
	if t == nil {
		return ""
	}
	return t.TTL
}

func sizeRangeText(r inspect.SizeRange) string {
	if r.From == r.To {
		return strconv.FormatUint(r.From, 10)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

func countRangeText(c inspect.CountRange) string {
	if c.Exact() {
		return strconv.FormatUint(c.Min, 10)
	}
	return fmt.Sprintf("%d-%d", c.Min, c.Max)
}

func (rep *inspectTables) timerTable(w io.Writer) error {
	s := section(w, "Timers", "OPERATOR", "TIMER SERVICE", "NAMESPACE", "TIMERS", "EARLIEST", "LATEST", "MAX PER KEY")
	for _, t := range rep.Timers {
		perKey := "-"
		if t.MaxPerKey != nil {
			perKey = strconv.FormatUint(*t.MaxPerKey, 10)
		}
		s.add(t.Operator, t.Name, t.NamespaceType, t.Timers, optTime(t.Earliest), optTime(t.Latest), perKey)
	}
	return s.render()
}

func (rep *inspectTables) operatorStateTable(w io.Writer) error {
	s := section(w, "Operator and broadcast state", "OPERATOR", "STATE", "DISTRIBUTION", "TYPE", "ENTRIES", "BYTES")
	for _, o := range rep.OperatorStates {
		s.add(o.Operator, o.Name, o.Distribution, o.Type, o.Entries, humanBytes(float64(o.Bytes)))
	}
	return s.render()
}

func (rep *inspectTables) hotKeyTables(w io.Writer) error {
	if rep.TopKeys == nil {
		return nil
	}
	for _, l := range []struct {
		title string
		keys  []inspect.HotKey
	}{{"Heaviest keys by entries", rep.TopKeys.ByEntries}, {"Heaviest keys by bytes", rep.TopKeys.ByBytes}} {
		s := section(w, l.title, "#", "OPERATOR", "STATE", "KEY", "ENTRIES", "BYTES")
		for i, k := range l.keys {
			s.add(i+1, k.Operator, k.State, cellText(k.Key), k.Entries, humanBytes(float64(k.Bytes)))
		}
		if err := s.render(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optTime(t *jsonvalue.Instant) string {
	if t == nil {
		return "-"
	}
	return formatTime(int64(*t))
}
