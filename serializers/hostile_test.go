package serializers

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// canonical reports whether every value of the snapshot has one encoding:
// true unless Avro is involved.
func canonical(s Snapshot) bool {
	if s.Kind == KindAvro {
		return false
	}
	for _, a := range s.Args {
		if !canonical(a) {
			return false
		}
	}
	return true
}

// checkDecode decodes untrusted src: it either fails with ErrDecode or gives
// a value that encodes back to src (or, for Avro, to a stable canonical
// form).
func checkDecode(t *testing.T, s Serializer, src []byte) error {
	t.Helper()
	v, err := s.DecodeAny(src)
	if err != nil {
		if !errors.Is(err, ErrDecode) {
			t.Fatalf("%s: Decode(%x) = %v, not an ErrDecode", s.Snapshot(), src, err)
		}
		return err
	}
	out, err := s.AppendAny(nil, v)
	if err != nil {
		t.Fatalf("%s: decoded %x to %#v, which does not encode: %v", s.Snapshot(), src, v, err)
	}
	if canonical(s.Snapshot()) {
		if !bytes.Equal(out, src) {
			t.Fatalf("%s: decoded %x, re-encoded %x", s.Snapshot(), src, out)
		}
		return nil
	}
	v2, err := s.DecodeAny(out)
	if err != nil {
		t.Fatalf("%s: canonical form %x of %x does not decode: %v", s.Snapshot(), out, src, err)
	}
	if out2, err := s.AppendAny(nil, v2); err != nil || !bytes.Equal(out, out2) {
		t.Fatalf("%s: canonical form %x re-encodes to %x, %v", s.Snapshot(), out, out2, err)
	}
	return nil
}

type hostileCase struct {
	name string
	s    Serializer
	good []byte
	// strict: no proper prefix of good is a valid encoding.
	strict bool
}

func hostileCases(t testing.TB) []hostileCase {
	var cases []hostileCase
	prefixFree := map[string]bool{
		"int32": true, "int64": true, "float32": true, "float64": true, "timestamp": true, "window": true,
		"avro typed": true, "list": true, "map": true, "nullable": true, "ttl avro": true, "map of avro": true,
	}
	for _, c := range restoreCases(t) {
		r := must[Serializer](t)(Restore(c.typed.Snapshot()))
		good := must[[]byte](t)(c.typed.AppendAny(nil, c.value))
		cases = append(cases, hostileCase{c.name, r, good, prefixFree[c.name]})
	}
	sess := must[Of[Session]](t)(Avro[Session](sessionSchema))
	cases = append(cases, hostileCase{"avro session", must[Serializer](t)(Restore(sess.Snapshot())),
		must[[]byte](t)(sess.Append(nil, sampleSession())), true})
	node := must[Serializer](t)(Restore(avroSnap(nodeSchema)))
	cases = append(cases, hostileCase{"avro node", node, unhex(t, "02 02 04 02 06 00"), true})
	return cases
}

func TestTruncatedInputs(t *testing.T) {
	for _, c := range hostileCases(t) {
		for i := range len(c.good) {
			err := checkDecode(t, c.s, c.good[:i])
			if c.strict && err == nil {
				t.Errorf("%s: the first %d of %d bytes decoded", c.name, i, len(c.good))
			}
		}
		if err := checkDecode(t, c.s, c.good); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if err := checkDecode(t, c.s, append(c.good, 0)); err == nil && c.strict {
			t.Errorf("%s: a trailing byte was accepted", c.name)
		}
	}
}

func TestRandomAndMutatedInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range hostileCases(t) {
		failures := 0
		for i := range 3000 {
			var src []byte
			if i%2 == 0 {
				src = make([]byte, rng.IntN(48))
				for j := range src {
					src[j] = byte(rng.Uint32())
				}
			} else {
				src = bytes.Clone(c.good)
				for range 1 + rng.IntN(3) {
					if len(src) > 0 {
						src[rng.IntN(len(src))] = byte(rng.Uint32())
					}
				}
			}
			if checkDecode(t, c.s, src) != nil {
				failures++
			}
		}
		// Fixed-width kinds accept any bytes of the right length; the
		// others must find something wrong in a good share of them.
		if c.strict && failures < 1000 && !strings.HasPrefix(c.name, "int") && !strings.HasPrefix(c.name, "float") &&
			c.name != "timestamp" && c.name != "window" {
			t.Errorf("%s: only %d of 3000 hostile inputs failed", c.name, failures)
		}
	}
}
