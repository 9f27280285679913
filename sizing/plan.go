package sizing

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/stateproc/stateproc/internal/uvarint"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/serializers"
	"github.com/stateproc/stateproc/ttl"
)

// Plan describes the keyed state of a job that has no savepoint yet, the
// way the seeds size SessionFeatures: per operator, per state, its kind,
// types, keys and entries per key, and the bytes per entry when they are
// known. See sizing/testdata/sessionfeatures.yaml.
type Plan struct {
	File string
	// Name labels the plan.
	Name string
	// HeapOverhead replaces the heap model by a factor (or a range of
	// factors) over the serialized bytes.
	HeapOverhead *Range
	Operators    []PlanOperator
}

// PlanOperator is one keyed operator of a plan.
type PlanOperator struct {
	UID         string
	Parallelism int
	// MaxParallelism is 0 when the plan leaves it to the engine's default.
	MaxParallelism int
	States         []PlanState
}

// PlanState is one keyed state or timer service of a plan.
type PlanState struct {
	Name string
	// Kind is value, list, map, reducing, aggregating or timers.
	Kind string
	// Keys is the number of distinct keys; EntriesPerKey the list
	// elements, map entries, windows or timers per key (1 by default).
	Keys, EntriesPerKey float64
	// BytesPerEntry, when known, is the serialized size of an entry with
	// everything counted, as the seeds' "50 bytes per MapState entry once
	// the key, user key prefix, value and RocksDB overhead are counted":
	// it is then taken for the savepoint format and for Pebble alike.
	// Otherwise both are worked out from the types.
	BytesPerEntry float64
	// KeyType and the others are serializer kinds (string, int64, ...);
	// the Bytes fields are average serialized sizes, needed only for the
	// variable-length types (16 by default).
	KeyType     string
	KeyBytes    float64
	Namespace   string // void (the default) or window
	MapKeyType  string
	MapKeyBytes float64
	ValueType   string
	ValueBytes  float64
	// ValueSchema is the Avro schema of an avro value.
	ValueSchema string
	TTL         time.Duration
}

var (
	planKinds  = []string{"value", "list", "map", "reducing", "aggregating", kindTimers}
	keyTypes   = []string{"string", "bytes", "bool", "int32", "int64", "float32", "float64", "timestamp", "avro"}
	valueTypes = keyTypes
	fixedWidth = map[string]int{"bool": 1, "int32": 4, "int64": 8, "float32": 4, "float64": 8, "timestamp": 8}
)

// defaultVariableBytes is the size assumed for a string or byte key or
// value whose size the plan does not give: the seeds' 16-byte key.
const defaultVariableBytes = 16

// Job turns the plan into sizing's input. Key groups are taken as evenly
// filled: a plan knows no skew.
func (p *Plan) Job() (*Job, error) {
	job := &Job{Source: p.File, FromPlan: true, HeapOverhead: p.HeapOverhead}
	for _, po := range p.Operators {
		maxP := po.MaxParallelism
		if maxP == 0 {
			maxP = keygroup.DefaultMaxParallelism(po.Parallelism)
		}
		op := Operator{UID: po.UID, Parallelism: po.Parallelism, MaxParallelism: maxP}
		for i := range po.States {
			st, err := po.States[i].state(maxP)
			if err != nil {
				return nil, err
			}
			op.States = append(op.States, *st)
		}
		job.Operators = append(job.Operators, op)
	}
	return job, nil
}

// planSizes are the serialized sizes of one entry's parts.
type planSizes struct {
	key, escapedKey, ns, mapKey, value, ttl int
	perKey                                  float64
}

func (s *PlanState) sizes() planSizes {
	z := planSizes{perKey: s.EntriesPerKey}
	z.key = typeBytes(s.KeyType, s.KeyBytes)
	// An int64 id below 2^32 starts with four zero bytes, each escaped to
	// two in the heap's record ids and Pebble's keys; an int32 with one.
	switch s.KeyType {
	case "int64":
		z.escapedKey = z.key + 4
	case "int32":
		z.escapedKey = z.key + 1
	default:
		z.escapedKey = z.key
	}
	if s.Namespace == "window" {
		z.ns = 16
	}
	if s.Kind == "map" {
		z.mapKey = typeBytes(s.MapKeyType, s.MapKeyBytes)
	}
	if s.Kind != kindTimers {
		z.value = s.valueBytes()
	}
	if s.TTL > 0 {
		z.ttl = timeSize
	}
	return z
}

func typeBytes(typ string, given float64) int {
	if w, ok := fixedWidth[typ]; ok {
		return w
	}
	if given > 0 {
		return int(math.Round(given))
	}
	return defaultVariableBytes
}

func (s *PlanState) valueBytes() int {
	if s.ValueType == "avro" && s.ValueBytes == 0 {
		l, _ := parseAvroLayout(s.ValueSchema) // checked when read
		return l.typicalEncoding()
	}
	return typeBytes(s.ValueType, s.ValueBytes)
}

func (s *PlanState) state(maxP int) (*State, error) {
	st := &State{Name: s.Name, Kind: s.Kind}
	if s.TTL > 0 {
		c := ttl.New(s.TTL)
		st.TTL = &c
	}
	z := s.sizes()
	if s.BytesPerEntry > 0 {
		st.PerEntry = Breakdown{Total: s.BytesPerEntry}
		st.PebblePerByte, st.PebbleFrom = 1, "plan"
	} else {
		st.PerEntry = z.savepointBreakdown(s.Kind)
		st.PebblePerByte, st.PebbleFrom = z.pebblePerEntry(s.Kind)/st.PerEntry.Total, "model"
	}
	entries := s.Keys * s.EntriesPerKey
	kg := KeyGroup{Keys: s.Keys / float64(maxP), Entries: entries / float64(maxP)}
	if s.Kind == kindTimers {
		kg.Keys = 0 // as in a savepoint's index
		// A plan gives no timer times, so the timer leak rule, which
		// reads their spread and their lag, has nothing to flag.
		st.Timers = &TimerStats{Timers: entries, Keys: s.Keys, MaxPerKey: int(math.Ceil(s.EntriesPerKey))}
		if s.EntriesPerKey > 1 {
			st.Timers.AboveOne = s.Keys
		}
	}
	kg.Bytes = kg.Entries * st.PerEntry.Total
	kg.Stored = kg.Bytes
	st.KeyGroups = make([]KeyGroup, maxP)
	for i := range st.KeyGroups {
		st.KeyGroups[i] = kg
	}
	return st, s.heapModel(st, z)
}

// heapModel evaluates the heap model on a typical entry of the planned
// sizes.
func (s *PlanState) heapModel(st *State, z planSizes) error {
	var mapKey, value *serializers.Snapshot
	if s.Kind == "map" {
		mapKey = &serializers.Snapshot{Kind: serializers.Kind(s.MapKeyType)}
	}
	if s.Kind != kindTimers {
		value = &serializers.Snapshot{Kind: serializers.Kind(s.ValueType), Schema: s.ValueSchema}
	}
	shape, err := newHeapShape(s.Kind, mapKey, value)
	if err != nil {
		return err
	}
	st.heap = shape
	st.RecordsPerKey = 1
	if s.Kind != "list" && s.Kind != "map" {
		st.RecordsPerKey = s.EntriesPerKey
	}
	st.spreadPerKey = st.RecordsPerKey
	st.HeapPerRecord = shape.record(z.escapedKey, z.ns)
	n := max(1, int(math.Round(s.EntriesPerKey)))
	st.HeapPerEntry = shape.entry(z.escapedKey, z.ns, typical(s.MapKeyType, z.mapKey), typical(s.ValueType, z.value)) +
		shape.collection(n)/float64(n)
	return nil
}

// typical is a value of n bytes of the type that costs what a typical one
// does on the heap: numbers above 255, which the runtime boxes.
func typical(typ string, n int) []byte {
	v := make([]byte, n)
	if _, ok := fixedWidth[typ]; ok && n >= 2 {
		binary.BigEndian.PutUint16(v[n-2:], 1000)
	}
	return v
}

// savepointBreakdown lays an entry out as the savepoint format does:
// length-prefixed key and namespace once per record with a count, then
// per entry a length-prefixed map key and value.
func (z planSizes) savepointBreakdown(kind string) Breakdown {
	b := Breakdown{MapKey: float64(z.mapKey), Value: float64(z.value), TTL: float64(z.ttl)}
	keyFrame := float64(uvarint.Len(uint64(z.key)) + uvarint.Len(uint64(z.ns)))
	switch kind {
	case kindTimers:
		b.Key, b.Namespace, b.Value = float64(z.key), float64(z.ns), timeSize
		b.Framing = keyFrame
	case "list", "map":
		b.Key, b.Namespace = float64(z.key)/z.perKey, float64(z.ns)/z.perKey
		b.Framing = (keyFrame+float64(uvarint.Len(uint64(math.Round(z.perKey)))))/z.perKey + float64(uvarint.Len(uint64(z.value+z.ttl)))
		if kind == "map" {
			b.Framing += float64(uvarint.Len(uint64(z.mapKey)))
		}
	default:
		b.Key, b.Namespace = float64(z.key), float64(z.ns)
		b.Framing = keyFrame + 1 + float64(uvarint.Len(uint64(z.value+z.ttl)))
	}
	b.Total = b.Key + b.Namespace + b.MapKey + b.Value + b.TTL + b.Framing
	return b
}

// Pebble's per-entry costs beyond the key and value bytes: the 8-byte
// sequence number and kind, about three bytes of block lengths, and the
// bloom filter's ten bits.
const pebbleEntryOverhead = 8 + 3 + 1.25

// pebblePerEntry lays an entry out as engine/pebblebackend does: a
// [key group][state id] prefix, escaped key, namespace and map key (or
// list sequence, or timer time), the stored value. Within a data block
// Pebble stores only what a key does not share with the one before it,
// except at every 16th key: entries of one record share their whole
// record prefix, other neighbours the 4-byte prefix. Block compression is
// left out, so this is an upper bound.
func (z planSizes) pebblePerEntry(kind string) float64 {
	record := 4 + z.escapedKey + 2 + z.ns + 2
	key, shared := record, 4.0
	switch kind {
	case "list":
		key += 8
	case "map":
		key += z.mapKey + 2
	case kindTimers:
		key += timeSize
	}
	if (kind == "list" || kind == "map") && z.perKey > 1 {
		shared = (float64(record)*(z.perKey-1) + 4) / z.perKey
	}
	stored := float64(key) - shared*15/16
	return stored + float64(z.value+z.ttl) + pebbleEntryOverhead
}
