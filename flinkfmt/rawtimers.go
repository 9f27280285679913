package flinkfmt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
	"github.com/stateproc/stateproc/flinkfmt/typeser"
)

// LayoutRawTimers is the raw keyed state in which Flink before 1.10 wrote
// the timers of heap timer services (all of them up to Flink 1.5, and
// RocksDB's by default up to 1.9): per key group, every timer service of
// the operator with its serializers and timers.
const LayoutRawTimers Layout = "raw keyed timers"

// timerServiceMagic is PostVersionedIOReadableWritable's marker, which
// InternalTimerServiceSerializationProxy writes first.
var timerServiceMagic = []byte{0xF1, 0xCD, 0x85, 0x9F}

// Timer-service proxy versions: none (no marker) for Flink 1.3 and 1.4.0,
// 1 for Flink 1.4.1 to 1.5 (Java-serialized serializers), 2 for Flink 1.6 on
// (serializer snapshots).
const maxTimerServiceVersion = 2

// rawTimerService is one timer service of a raw keyed key group.
type rawTimerService struct {
	name     string
	key, ns  *typeser.Serializer
	event    []rawTimer
	proc     []rawTimer
	keyBytes [][]byte
}

type rawTimer struct {
	key, ns []byte
	ts      int64
}

// parseRawTimers reads one key group of legacy raw keyed timers.
func parseRawTimers(r *wire.Buf) ([]*rawTimerService, error) {
	v := 0
	if bytes.HasPrefix(r.Rest(), timerServiceMagic) {
		r.Raw(4, "timer service marker")
		v = int(r.I32())
		if r.Err() == nil && (v < 1 || v > maxTimerServiceVersion) {
			return nil, corruptf("timer service version %d", v)
		}
	}
	n := r.Count("timer services", 3)
	var out []*rawTimerService
	for i := 0; i < n && r.Err() == nil; i++ {
		s := &rawTimerService{name: r.UTF("timer service name")}
		if err := r.Err(); err != nil {
			return nil, corrupt(err)
		}
		var err error
		switch v {
		case 0:
			// Flink 1.3 and 1.4.0: the two serializers Java-serialized, each
			// its own object stream.
			if s.key, err = typeser.ReadJavaSerializer(r); err == nil {
				s.ns, err = typeser.ReadJavaSerializer(r)
			}
		case 1:
			var sers []*typeser.Serializer
			if sers, err = typeser.ReadLegacySerializers(r); err == nil && len(sers) != 2 {
				err = corruptf("timer service %q has %d serializers, want 2", s.name, len(sers))
			}
			if err == nil {
				s.key, s.ns = sers[0], sers[1]
			}
		default:
			if s.key, err = typeser.ReadVersioned(r); err == nil {
				s.ns, err = typeser.ReadVersioned(r)
			}
		}
		if err != nil {
			return nil, snapshotErr(fmt.Sprintf("timer service %q", s.name), err)
		}
		for _, set := range []*[]rawTimer{&s.event, &s.proc} {
			c := r.Count("timers", 9)
			for j := 0; j < c && r.Err() == nil; j++ {
				t, err := readRawTimer(r, s)
				if err != nil {
					return nil, err
				}
				*set = append(*set, t)
			}
		}
		out = append(out, s)
	}
	if err := r.Err(); err != nil {
		return nil, corrupt(err)
	}
	if r.Len() != 0 {
		return nil, corruptf("%d bytes follow the timer services", r.Len())
	}
	return out, nil
}

// readRawTimer reads TimerHeapInternalTimer's serializer: key, namespace,
// then the timestamp as a plain long.
func readRawTimer(r *wire.Buf, s *rawTimerService) (rawTimer, error) {
	b := r.Bytes()
	start := r.Pos()
	if _, err := s.key.Read(r); err != nil {
		return rawTimer{}, rawTimerErr(s, err)
	}
	mid := r.Pos()
	if _, err := s.ns.Read(r); err != nil {
		return rawTimer{}, rawTimerErr(s, err)
	}
	end := r.Pos()
	return rawTimer{key: b[start:mid], ns: b[mid:end], ts: r.I64()}, nil
}

func rawTimerErr(s *rawTimerService, err error) error {
	if errors.Is(err, typeser.ErrUnframed) {
		return unsupportedf("timer service %q: %v", s.name, err)
	}
	return corrupt(fmt.Errorf("timer service %q: %w", s.name, err))
}

// rawTimerNames are the names current Flink gives a timer service's two
// priority queues; legacy timers are listed under the same names.
func rawTimerNames(service string) [2]string {
	return [2]string{"_timer_state/event_" + service, "_timer_state/processing_" + service}
}

// addRawTimers registers the timer services of a subtask's raw keyed
// state as states of k, from its first key group.
func (r *Reader) addRawTimers(ctx context.Context, k *Keyed, sk *subtaskKeyed, byName map[string]int) error {
	h := sk.handle
	if len(h.Offsets) == 0 || h.Stream == nil {
		return nil
	}
	b, name, err := r.streamBytes(ctx, h.Stream, h.Offsets[0], r.spanEnd(h, h.Offsets[0], sk)-h.Offsets[0])
	sk.file = name
	if err != nil {
		return err
	}
	services, err := parseRawTimers(wire.New(b, h.Offsets[0]))
	if err != nil {
		return err
	}
	for _, s := range services {
		if k.Key == nil {
			k.Key = s.key
		}
		for _, n := range rawTimerNames(s.name) {
			i, ok := byName[n]
			if !ok {
				i = len(k.States)
				byName[n] = i
				timer := typeser.Timer(s.key, s.ns)
				k.States = append(k.States, &StateMeta{Name: n, Backend: PriorityQueue, Kind: Timers, Options: map[string]string{}, Serializers: map[string]*typeser.Serializer{valueSerializerKey: timer}, Namespace: s.ns, Value: timer, Stored: timer})
			}
			sk.ids = append(sk.ids, i)
		}
	}
	return nil
}

// rawTimers emits the timers of one key group of raw keyed timers.
func (p *kgParser) rawTimers(r *wire.Buf) error {
	services, err := parseRawTimers(r)
	if err != nil {
		return err
	}
	if 2*len(services) != len(p.sk.ids) {
		return corruptf("key group has %d timer services, the first key group %d", len(services), len(p.sk.ids)/2)
	}
	for i, s := range services {
		for j, set := range [][]rawTimer{s.event, s.proc} {
			idx := p.sk.ids[2*i+j]
			if p.state >= 0 && p.state != idx {
				continue
			}
			for _, t := range set {
				e := Entry{State: idx}
				e.KeyGroup, e.Key, e.Namespace, e.Timestamp = p.kg, t.key, t.ns, t.ts
				*p.out = append(*p.out, e)
			}
		}
	}
	return nil
}
