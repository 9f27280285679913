package serializers

import (
	"bufio"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docExamples computes each example that doc.go lists, by its text.
func docExamples(t *testing.T) map[string]func() ([]byte, error) {
	seven := int32(7)
	avroLongs := must[Of[any]](t)(AvroGeneric(`{"type":"map","values":"long"}`))
	return map[string]func() ([]byte, error){
		"bool true":            func() ([]byte, error) { return Bool().Append(nil, true) },
		"int32 -2":             func() ([]byte, error) { return Int32().Append(nil, -2) },
		"int64 42":             func() ([]byte, error) { return Int64().Append(nil, 42) },
		"float32 1.5":          func() ([]byte, error) { return Float32().Append(nil, 1.5) },
		"float64 -2.25":        func() ([]byte, error) { return Float64().Append(nil, -2.25) },
		`string "héllo"`:       func() ([]byte, error) { return String().Append(nil, "héllo") },
		"bytes {00 ff}":        func() ([]byte, error) { return Bytes().Append(nil, []byte{0, 0xff}) },
		"void":                 func() ([]byte, error) { return Void().Append(nil, VoidNamespace{}) },
		"window [1, 2)":        func() ([]byte, error) { return Window().Append(nil, TimeWindow{1, 2}) },
		"nullable<int32> null": func() ([]byte, error) { return Nullable(Int32()).Append(nil, nil) },
		"nullable<int32> 7":    func() ([]byte, error) { return Nullable(Int32()).Append(nil, &seven) },
		"timestamp 2023-11-14T22:13:20Z": func() ([]byte, error) {
			return Timestamp().Append(nil, time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC))
		},
		`avro map<long> {"b": 1, "a": 2}`: func() ([]byte, error) {
			return avroLongs.Append(nil, map[string]any{"b": int64(1), "a": int64(2)})
		},
		"list<int64> [1, 2]": func() ([]byte, error) { return List(Int64()).Append(nil, []int64{1, 2}) },
		`map<string,int32> {"b": 1, "a": 2}`: func() ([]byte, error) {
			return Map(String(), Int32()).Append(nil, map[string]int32{"b": 1, "a": 2})
		},
		`ttl<string> (1000, "x")`: func() ([]byte, error) {
			return TTL(String()).Append(nil, TTLValue[string]{LastModified: 1000, Value: "x"})
		},
		`timer<string,void> (-1, "k")`: func() ([]byte, error) {
			return Timer(String(), Void()).Append(nil, TimerValue[string, VoidNamespace]{Timestamp: -1, Key: "k"})
		},
		`timer<string,window> (5, "k", [1, 2))`: func() ([]byte, error) {
			return Timer(String(), Window()).Append(nil, TimerValue[string, TimeWindow]{Timestamp: 5, Key: "k", Namespace: TimeWindow{1, 2}})
		},
	}
}

// TestDocExamples keeps the encoding table in doc.go true: every example
// there must be produced by the code, and every example here must be there.
func TestDocExamples(t *testing.T) {
	f, err := os.Open("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^//\t(.+) → (.+)$`)
	examples := docExamples(t)
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name, want := m[1], m[2]
		if want == "(nothing)" {
			want = ""
		}
		encode, ok := examples[name]
		if !ok {
			t.Errorf("doc.go example %q has no check in this test", name)
			continue
		}
		seen[name] = true
		got, err := encode()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if g := spacedHex(got); g != want {
			t.Errorf("%s:\n code %s\n doc  %s", name, g, want)
		}
	}
	for name := range examples {
		if !seen[name] {
			t.Errorf("example %q is not in doc.go", name)
		}
	}
}

func spacedHex(b []byte) string {
	h := hex.EncodeToString(b)
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, " ")
}

// TestGoldenAvro pins the Avro encodings of the fixtures, typed and generic.
func TestGoldenAvro(t *testing.T) {
	req := must[Of[OpenRequest]](t)(Avro[OpenRequest](openRequestSchema))
	want := "0c 722d31303933 16 74656e616e742d61636d65 06 677074 80a0abfef962 8205"
	if got := must[[]byte](t)(req.Append(nil, sampleRequest)); spacedHex(got) != spacedHex(unhex(t, want)) {
		t.Errorf("OpenRequest = %x, want %s", got, want)
	}

	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	want = "08752d3432" + // user
		"18" + // 12 counts, sorted: art books drinks films food games garden music sport tools toys travel
		"066172742a 0a626f6f6b7346 0c6472696e6b7354 0a66696c6d7346 08666f6f6438 0a67616d657346" +
		"0c67617264656e54 0a6d7573696346 0a73706f727446 0a746f6f6c7346 08746f797338 0c74726176656c54 00" +
		"06 0262 0261 0263 00" + // tags keep their order
		"06 0261 04 027903 027a01 00 026d 00 0278 06 027004 027102 027206 00 00" + // nested: a, m, x
		"02 08 0e62726f77736572 0e66697265666f78 086c616e67 04656e 046f73 0a6c696e7578 04747a 06555443 00" // attrs
	if got := must[[]byte](t)(sess.Append(nil, sampleSession())); spacedHex(got) != spacedHex(unhex(t, want)) {
		t.Errorf("Session =\n %x\nwant\n %x", got, unhex(t, want))
	}
}
