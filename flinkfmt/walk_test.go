package flinkfmt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/flinkfmt/keyhash"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/storage"
)

// fixtureResult is what reading one fixture gave.
type fixtureResult struct {
	layouts    map[Layout]int
	entries    int
	opaque     map[string]bool // serializer classes of opaque values
	refused    map[string]bool // why states could not be read
	keysHashed int
}

// readFixture reads everything of one savepoint directory: every keyed
// state's entries, decoded, and every operator state. A structural error
// or a value that does not decode fails the test; what is not readable yet
// is recorded.
func readFixture(t *testing.T, dir string) fixtureResult {
	t.Helper()
	ctx := context.Background()
	res := fixtureResult{layouts: map[Layout]int{}, opaque: map[string]bool{}, refused: map[string]bool{}}
	r, err := Open(ctx, storage.LocalDir(dir), Options{})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	refuse := func(err error) {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", dir, err)
			return
		}
		res.refused[refusal(err)] = true
	}
	for _, op := range r.Metadata().Operators {
		k, err := r.Keyed(ctx, op)
		switch {
		case errors.Is(err, ErrNotKeyed):
		case err != nil:
			refuse(err)
			for _, st := range op.Subtasks {
				if l := HandleLayout(st.ManagedKeyed); l != "" {
					res.layouts[l]++
				} else if st.ManagedKeyed != nil {
					res.layouts["key groups, unread"]++
				}
			}
		default:
			for l, n := range k.Layouts {
				res.layouts[l] += n
			}
			res.walkKeyed(t, dir, k)
		}
		states, warns, err := r.OperatorStates(ctx, op)
		if err != nil {
			refuse(err)
			continue
		}
		for _, w := range warns {
			res.opaque[shortName(w.Serializer)+" of "+w.Class] = true
		}
		for _, s := range states {
			for _, sub := range s.Subtasks {
				for _, e := range sub.Elements {
					res.decode(t, dir, s.Name, s.Element, e)
				}
			}
			for _, e := range s.Entries {
				res.decode(t, dir, s.Name, s.Key, e.Key)
				res.decode(t, dir, s.Name, s.Value, e.Value)
			}
		}
	}
	return res
}

func (res *fixtureResult) walkKeyed(t *testing.T, dir string, k *Keyed) {
	it := k.Entries(context.Background(), -1, keygroup.All(k.Operator.MaxParallelism))
	seen := map[string]bool{}
	lastKG := -1
	for it.Next() {
		e := it.Entry()
		res.entries++
		if e.KeyGroup < lastKG {
			t.Errorf("%s: key group %d after %d", dir, e.KeyGroup, lastKG)
		}
		lastKG = e.KeyGroup
		m := k.States[e.State]
		key := res.decode(t, dir, m.Name+" key", k.Key, e.Key)
		if h, ok := keyhash.HashCode(key); ok {
			if got := keyhash.KeyGroup(h, k.Operator.MaxParallelism); got != e.KeyGroup {
				t.Errorf("%s: state %s: key %v hashes to key group %d, read from %d", dir, m.Name, key, got, e.KeyGroup)
			}
			id := fmt.Sprintf("%d/%x", e.KeyGroup, e.Key)
			if !seen[id] {
				seen[id] = true
				res.keysHashed++
			}
		}
		if m.Kind == Timers {
			res.decode(t, dir, m.Name+" namespace", m.Value.Args[1], e.Namespace)
			continue
		}
		res.decode(t, dir, m.Name+" namespace", m.Namespace, e.Namespace)
		if m.MapKey != nil {
			res.decode(t, dir, m.Name+" map key", m.MapKey, e.MapKey)
		}
		if !e.Null {
			res.decode(t, dir, m.Name, m.Stored, e.Value)
		}
	}
	if err := it.Err(); err != nil {
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", dir, err)
		} else {
			res.refused[refusal(err)] = true
		}
	}
	for _, w := range it.Warnings() {
		res.opaque[shortName(w.Serializer)+" of "+w.Class+", unframed"] = true
	}
}

func (res *fixtureResult) decode(t *testing.T, dir, what string, s *typeser.Serializer, b []byte) any {
	v, err := s.Decode(b)
	if err != nil {
		t.Errorf("%s: %s: %v", dir, what, err)
		return nil
	}
	for _, c := range opaqueClasses(v, 0) {
		res.opaque[c] = true
	}
	return v
}

func opaqueClasses(v any, depth int) []string {
	if depth > typeser.MaxDepth {
		return nil
	}
	var out []string
	switch x := v.(type) {
	case typeser.OpaqueValue:
		out = append(out, shortName(x.Serializer)+" of "+x.Class)
	case typeser.RecordValue:
		for _, f := range x.Fields {
			out = append(out, opaqueClasses(f.Value, depth+1)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, opaqueClasses(e, depth+1)...)
		}
	case []typeser.MapEntry:
		for _, e := range x {
			out = append(out, opaqueClasses(e.Key, depth+1)...)
			out = append(out, opaqueClasses(e.Value, depth+1)...)
		}
	case typeser.EitherValue:
		out = opaqueClasses(x.Value, depth+1)
	case typeser.TTLValue:
		out = opaqueClasses(x.Value, depth+1)
	}
	return out
}

var offsetText = regexp.MustCompile(`offset [0-9]+: `)

// refusal shortens an unsupported error to what was refused.
func refusal(err error) string {
	s := offsetText.ReplaceAllString(err.Error(), "")
	for _, marker := range []string{"keyed state header version", "operator state header version", "native RocksDB layout", "changelog layout", "unsupported serializer snapshot: "} {
		if i := strings.Index(s, marker); i >= 0 {
			s = s[i:]
			s = strings.TrimPrefix(s, "unsupported serializer snapshot: ")
			if j := strings.Index(s, " ("); j >= 0 && strings.HasSuffix(marker, "layout") {
				s = s[:j]
			}
			if j := strings.Index(s, ": not readable yet"); j >= 0 {
				s = s[:j]
			}
			if j := strings.Index(s, " (Flink"); j >= 0 {
				s = s[:j] + " (Flink 1.3 to 1.6)"
			}
			if j := strings.Index(s, " version "); j >= 0 && !strings.Contains(s, "header") {
				s = s[:j]
			}
			return s
		}
	}
	return s
}

// TestEveryFixture reads every Flink savepoint and checkpoint of
// ../shared/flink-savepoints and tabulates the outcome by metadata version,
// backend and layout. No fixture may panic, give a structural error or a
// value that does not decode; entries come in ascending key groups, and
// keys whose Java hashCode is defined by value must hash to the key group
// they were read from.
func TestEveryFixture(t *testing.T) {
	root, rows := inventory(t)
	type cell struct {
		fixtures, complete, opaque, refused int
		opaqueBy, refusedBy                 map[string]int
	}
	table := map[string]*cell{}
	var entries, keys int
	for _, row := range rows {
		res := readFixture(t, filepath.Join(root, row.dir))
		entries += res.entries
		keys += res.keysHashed
		var ls []string
		for l := range res.layouts {
			ls = append(ls, string(l))
		}
		sort.Strings(ls)
		layout := strings.Join(ls, "+")
		if layout == "" {
			layout = "no keyed state"
		}
		backend := row.backend
		if backend == "" {
			backend = "-"
		}
		id := fmt.Sprintf("v%s\t%s\t%s", row.version, backend, layout)
		c := table[id]
		if c == nil {
			c = &cell{opaqueBy: map[string]int{}, refusedBy: map[string]int{}}
			table[id] = c
		}
		c.fixtures++
		switch {
		case len(res.refused) > 0:
			c.refused++
			for why := range res.refused {
				c.refusedBy[why]++
			}
		case len(res.opaque) > 0:
			c.opaque++
			for s := range res.opaque {
				c.opaqueBy[s]++
			}
		default:
			c.complete++
		}
	}
	var ids []string
	for id := range table {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nversion\tbackend\tlayout\tfixtures\tcomplete\tsome opaque\trefused\tdetails\n")
	var sum [4]int
	for _, id := range ids {
		c := table[id]
		fmt.Fprintf(&sb, "%s\t%d\t%d\t%d\t%d\t%s%s\n", id, c.fixtures, c.complete, c.opaque, c.refused, counts("opaque: ", c.opaqueBy), counts("refused: ", c.refusedBy))
		sum[0] += c.fixtures
		sum[1] += c.complete
		sum[2] += c.opaque
		sum[3] += c.refused
	}
	fmt.Fprintf(&sb, "total\t\t\t%d\t%d\t%d\t%d\n", sum[0], sum[1], sum[2], sum[3])
	// FORMAT-NOTES.md repeats the totals; keep it true.
	notes, err := os.ReadFile("FORMAT-NOTES.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("| **total** | | | **%d** | **%d** | **%d** | **%d** |", sum[0], sum[1], sum[2], sum[3]); !strings.Contains(string(notes), want) {
		t.Errorf("FORMAT-NOTES.md does not have the totals %q", want)
	}
	t.Log(sb.String())
	t.Logf("%d fixtures, %d keyed entries, %d distinct keys checked against their key group", len(rows), entries, keys)
	if keys == 0 {
		t.Error("no key was checked against its key group")
	}
}

func counts(prefix string, m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(parts)
	return prefix + strings.Join(parts, ", ") + "; "
}

func shortName(class string) string {
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		return class[i+1:]
	}
	return class
}
