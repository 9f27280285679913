package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/bench/internal/measure"
	"github.com/stateproc/stateproc/serializers"
)

// hambaLoop is the baseline: hamba's own schema resolution over values held
// in memory.
type hambaLoop struct {
	in       *input
	resolved avro.Schema // the writer schema, resolved for the reader
	reader   avro.Schema
	api      avro.API
	out      []byte
}

func newHambaLoop(in *input) (*hambaLoop, error) {
	w, err := avro.ParseWithCache(in.writer, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	r, err := avro.ParseWithCache(in.reader, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	resolved, err := avro.NewSchemaCompatibility().Resolve(r, w)
	if err != nil {
		return nil, fmt.Errorf("hamba cannot resolve the pair: %w", err)
	}
	return &hambaLoop{in: in, resolved: resolved, reader: r, api: avro.Config{}.Freeze()}, nil
}

// migrate decodes one stored value with the resolved schema and encodes it
// with the reader's, the TTL timestamp kept in front.
func (l *hambaLoop) migrate(v []byte) ([]byte, error) {
	var ts []byte
	if l.in.ttl {
		ts, v = v[:8], v[8:]
	}
	var datum any
	if err := l.api.Unmarshal(l.resolved, v, &datum); err != nil {
		return nil, err
	}
	enc, err := l.api.Marshal(l.reader, datum)
	if err != nil {
		return nil, err
	}
	l.out = append(append(l.out[:0], ts...), enc...)
	return l.out, nil
}

// run migrates every value once and returns the wall and CPU time taken.
func (l *hambaLoop) run() measure.Usage {
	cpu0, start := measure.SelfCPU(), time.Now()
	for _, v := range l.in.values {
		if _, err := l.migrate(v); err != nil {
			panic(err) // agrees has migrated every value before
		}
	}
	u := measure.Usage{Wall: time.Since(start), CPU: measure.SelfCPU() - cpu0}
	u.PeakRSS, _ = measure.PeakRSS()
	return u
}

// agrees checks that hamba and stateproc's migration write the same bytes
// for every value: the two sides do the same work.
func (l *hambaLoop) agrees() error {
	snap := func(schema string) serializers.Snapshot {
		s := serializers.Snapshot{Kind: serializers.KindAvro, Schema: schema}
		if l.in.ttl {
			s = serializers.Snapshot{Kind: serializers.KindTTL, Args: []serializers.Snapshot{s}}
		}
		return s
	}
	m, err := serializers.Migrator(snap(l.in.writer), snap(l.in.reader), serializers.MigrateOptions{})
	if err != nil {
		return err
	}
	var ours []byte
	for i, v := range l.in.values {
		theirs, err := l.migrate(v)
		if err != nil {
			return fmt.Errorf("hamba, value %d: %w", i, err)
		}
		if ours, err = m(ours[:0], v); err != nil {
			return fmt.Errorf("stateproc, value %d: %w", i, err)
		}
		if !bytes.Equal(ours, theirs) {
			return fmt.Errorf("value %d: stateproc writes %x, hamba %x", i, ours, theirs)
		}
	}
	return nil
}
