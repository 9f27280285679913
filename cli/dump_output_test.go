package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/internal/sptest"
	"github.com/stateproc/stateproc/savepoint"
)

// jsonLine is what the dump wrote before it had its own writer: every value
// through an encoding/json Encoder without HTML escaping.
func jsonLine(t *testing.T, f fields) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range f {
		if i > 0 {
			b.WriteByte(',')
		}
		buf.Reset()
		if err := enc.Encode(c.name); err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.TrimSuffix(buf.String(), "\n") + ":")
		v := c.value
		if ms, ok := v.(instant); ok {
			v = jsonvalue.Time(int64(ms))
		}
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.TrimSuffix(buf.String(), "\n"))
	}
	b.WriteString("}\n")
	return b.String()
}

func randomString(rng *rand.Rand) string {
	alphabets := []string{"abcXYZ09 -_.:", "<>&\"\\/\n\t\x00\x1f\x7f", "é€\u2028\u2029😀", "\xff\xc3"}
	var b strings.Builder
	for range rng.IntN(12) {
		a := alphabets[rng.IntN(len(alphabets))]
		r := []rune(a)
		if rng.IntN(2) == 0 {
			b.WriteString(string(r[rng.IntN(len(r))]))
		} else {
			b.WriteByte(a[rng.IntN(len(a))])
		}
	}
	return b.String()
}

func randomFloat(rng *rand.Rand) float64 {
	for {
		var f float64
		switch rng.IntN(4) {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
		case 2:
			f = float64(rng.IntN(2000) - 1000)
		default:
			f = []float64{1e-6, 9.99999e-7, 1e21, 9.99999e20, 0, math.Copysign(0, -1), 5e-324, math.MaxFloat64}[rng.IntN(8)]
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

func randomValue(rng *rand.Rand, depth int) any {
	n := 12
	if depth > 3 {
		n = 8
	}
	switch rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return int64(rng.Uint64())
	case 3:
		return int32(rng.Uint32())
	case 4:
		return randomFloat(rng)
	case 5:
		return randomString(rng)
	case 6:
		if depth == 0 { // a field, never part of a value
			return instant(rng.Int64N(1<<45) - 1<<44)
		}
		return nil
	case 7:
		return []byte(randomString(rng)) // left to encoding/json: base64
	case 8:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth+1)
		}
		return l
	case 9:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[randomString(rng)] = randomValue(rng, depth+1)
		}
		return m
	case 10:
		return []map[string]any{{"key": randomValue(rng, depth+1), "value": randomValue(rng, depth+1)}}
	default:
		return jsonvalue.Object([]string{"b<", "a"}, []any{randomValue(rng, depth+1), randomString(rng)})
	}
}

// TestDumpLinesAsEncodingJSON: the dump's writer gives, for every kind of
// value a line holds, the bytes encoding/json gave.
func TestDumpLinesAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var out bytes.Buffer
	s := newDumpSink(&out, outputJSON, 0)
	var want strings.Builder
	for range 20000 {
		var f fields
		for range 1 + rng.IntN(5) {
			f.add(randomString(rng), randomValue(rng, 0))
		}
		want.WriteString(jsonLine(t, f))
		if err := s.write(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	got, wantLines := strings.Split(out.String(), "\n"), strings.Split(want.String(), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("%d lines, want %d", len(got), len(wantLines))
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Fatalf("line %d:\n got %s\nwant %s", i, got[i], wantLines[i])
		}
	}
}

// TestDumpLineErrors: what encoding/json cannot write fails the line, as it
// did.
func TestDumpLineErrors(t *testing.T) {
	s := newDumpSink(&bytes.Buffer{}, outputJSON, 0)
	for _, v := range []any{math.NaN(), math.Inf(1), []any{1, math.Inf(-1)}, map[string]any{"a": make(chan int)}} {
		if err := s.write(fields{{name: "value", value: v}}); err == nil {
			t.Errorf("%v: written", v)
		}
	}
}

// TestDumpFromBytesAsDecoded: the lines of states whose parts are written
// from their bytes are those of the decoded values, over every keyed state
// and timer service of the checked-in savepoints.
func TestDumpFromBytesAsDecoded(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/savepoints/v*/*")
	if err != nil || len(dirs) < 10 {
		t.Fatalf("checked-in savepoints: %v, %d found", err, len(dirs))
	}
	direct, lines := 0, 0
	for _, dir := range dirs {
		src := sptest.Open(t, dir)
		m := src.Metadata()
		for i := range m.Operators {
			op := &m.Operators[i]
			for _, r := range m.Refs(i) {
				ref := stateRef{Ref: r, Keyed: m.KeyedState(r)}
				var dec *savepoint.Decoder
				if ref.Keyed != nil {
					dec, err = savepoint.NewDecoder(op, ref.Keyed)
				} else {
					ref.Timers = m.TimerService(r)
					dec, err = savepoint.NewTimerDecoder(op, ref.Timers)
				}
				if err != nil {
					t.Fatal(err)
				}
				var got, want bytes.Buffer
				fast := newDumpPrinter(op, ref, dec, false, m.CreatedAt, newDumpSink(&got, outputJSON, 0))
				slow := newDumpPrinter(op, ref, dec, false, m.CreatedAt, newDumpSink(&want, outputJSON, 0))
				slow.direct = directParts{}
				if fast.direct.ok {
					direct++
				}
				for _, seg := range sptest.Segments(t, src, r) {
					for _, p := range []*dumpPrinter{fast, slow} {
						if err := p.segment(m, savepoint.SegmentEntries(context.Background(), src, seg), seg, nil); err != nil {
							t.Fatalf("%s %s: %v", dir, m.Describe(r), err)
						}
					}
				}
				for _, p := range []*dumpPrinter{fast, slow} {
					if err := p.sink.close(); err != nil {
						t.Fatal(err)
					}
				}
				if got.String() != want.String() {
					t.Fatalf("%s %s: written from bytes\n%s\ndecoded\n%s", dir, m.Describe(r), got.String(), want.String())
				}
				lines += strings.Count(got.String(), "\n")
			}
		}
	}
	if direct < 5 || lines < 1000 {
		t.Errorf("%d states written from bytes, %d lines: too few to compare", direct, lines)
	}
	t.Logf("%d lines alike; %d states written from bytes", lines, direct)
}
