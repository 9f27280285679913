package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateproc/stateproc/inspect"
	"github.com/stateproc/stateproc/internal/jsonvalue"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/serializers"
)

type dumpOptions struct {
	output    string
	operator  string
	state     string
	key       string
	keyGroups string
	limit     int
	raw       bool
	now       string
	stderr    io.Writer
}

func newDumpCmd() *cobra.Command {
	var o dumpOptions
	cmd := &cobra.Command{
		Use:   "dump SAVEPOINT --operator UID --state NAME",
		Short: "Print the entries of one state, decoded, as JSON lines",
		Long: `Dump prints the entries of one state of one operator, decoded with the
serializers stored in the savepoint, one JSON object per line:

  keyed state     key, namespace (unless void), map_key (map states) or index
                  (list states), value, and for TTL states ttl_last_modified
                  and expired (at --now, by the TTL rule)
  timer service   key, namespace (unless void), timestamp
  operator state  subtask, index, value
  broadcast state key, value

--key reads only the key group of that key and prints only its entries: a
string key as is, numbers as numbers, bytes as hex, an Avro key as JSON; of an
Apache Flink savepoint, a tuple, case class or POJO key as a JSON array of its
fields (or an object by field name), found through Flink's key-group hash where
Java's hashCode of the key is defined by its value, and by reading every key
group otherwise. --operator takes the uid, the operator ID of a Flink
savepoint, or a name that one operator alone has.
--raw prints the stored bytes as hex instead of decoding them. Byte strings
in decoded values are hex too.`,
		Example: `  stateproc dump ./sp-42 --operator features --state category-counts --limit 10
  stateproc dump ./sp-42 --operator features --state category-counts --key user-1093
  stateproc dump ./sp-42 --operator features --state session-end --key-groups 0-15
  stateproc dump ./sp-42 --operator source --state offsets
  stateproc dump ./sp-42 --operator features --state session --raw | head
  stateproc dump ./flink-sp --operator 41e91aae0bee218c44306cf7d21940ad --state state-name --key '[2]' `,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runDump(cmd.Context(), o, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	// Dump's natural output is JSON lines, so unlike the other commands its
	// default is json.
	f.StringVarP(&o.output, "output", "o", outputJSON, "output format: json (one object per line) or table")
	f.StringVar(&o.operator, "operator", "", "the operator: its `uid`, ID or name")
	f.StringVar(&o.state, "state", "", "`name` of a keyed state, timer service, operator state or broadcast state")
	f.StringVar(&o.key, "key", "", "print only this `key` (reads only its key group)")
	f.StringVar(&o.keyGroups, "key-groups", "", "print only key groups `A-B` (or one key group A)")
	f.IntVar(&o.limit, "limit", 0, "stop after `N` entries (0: no limit)")
	f.BoolVar(&o.raw, "raw", false, "print stored bytes as hex instead of decoding")
	f.StringVar(&o.now, "now", "", "`time` for expired, RFC 3339 or epoch ms (default: the savepoint's creation time)")
	cmd.MarkFlagRequired("operator")
	cmd.MarkFlagRequired("state")
	return cmd
}

func runDump(ctx context.Context, o dumpOptions, args []string, out io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.limit < 0 {
		return usagef("--limit must be 0 or more, not %d", o.limit)
	}
	src, err := openSavepoint(ctx, args[0])
	if err != nil {
		return err
	}
	defer src.Close()
	m := src.Metadata()
	opIdx, err := findOperator(m, o.operator)
	if err != nil {
		return err
	}
	ref, err := findState(m, opIdx, o.state)
	if err != nil {
		// A state may be missing because its layout is not read.
		if uerr := m.CheckRead(opIdx); uerr != nil {
			return uerr
		}
		return err
	}
	now := m.CreatedAt
	if o.now != "" {
		if now, err = parseTime(o.now); err != nil {
			return err
		}
	}
	sink := newDumpSink(out, o.output, o.limit)
	switch {
	case ref.Operator != nil:
		if o.key != "" || o.keyGroups != "" {
			return usagef("--key and --key-groups apply to keyed state; %q is operator state", o.state)
		}
		err = dumpOperatorState(ref.Operator, o.raw, sink)
	case ref.Broadcast != nil:
		if o.keyGroups != "" {
			return usagef("--key-groups applies to keyed state; %q is broadcast state", o.state)
		}
		err = dumpBroadcast(ref.Broadcast, o, sink)
	default:
		err = dumpKeyed(ctx, src, ref, o, now, sink)
	}
	// What was printed before an error is still written: it shows how far
	// the dump got.
	closeErr := sink.close()
	printWarnings(o.stderr, inspect.Warnings(src))
	if err != nil && !errors.Is(err, errLimit) {
		return err
	}
	return closeErr
}

// dumpKeyed prints a keyed state or timer service, reading only the
// segments of the key groups asked for.
func dumpKeyed(ctx context.Context, src savepoint.Source, ref stateRef, o dumpOptions, now int64, sink *dumpSink) error {
	m := src.Metadata()
	op := &m.Operators[ref.Ref.Operator]
	var dec *savepoint.Decoder
	var err error
	if ref.Keyed != nil {
		dec, err = savepoint.NewDecoder(op, ref.Keyed)
	} else {
		dec, err = savepoint.NewTimerDecoder(op, ref.Timers)
	}
	if err != nil {
		// The snapshots were checked when the metadata was read; one that
		// still cannot be restored makes the savepoint unreadable here.
		return inspect.MetadataCorrupt("a serializer snapshot cannot be restored", err)
	}
	kgs := keygroup.All(op.MaxParallelism)
	if o.keyGroups != "" {
		if kgs, err = parseKeyGroups(o.keyGroups, op.MaxParallelism); err != nil {
			return err
		}
	}
	var key *keyMatch
	if o.key != "" {
		if key, err = parseKeyArg(op, dec.Key(), o.key); err != nil {
			return err
		}
		if key.keyGroup >= 0 {
			if !kgs.Contains(key.keyGroup) {
				return nil
			}
			kgs = keygroup.Range{Start: key.keyGroup, End: key.keyGroup}
		}
	}
	p := newDumpPrinter(op, ref, dec, o.raw, now, sink)
	segs, err := src.Segments(ctx, ref.Ref, kgs)
	if err != nil {
		return err
	}
	// In a bucket the walk reads the next segments while this one prints.
	walk := savepoint.WalkSegments(ctx, src, segs)
	defer walk.Close()
	for i, seg := range segs {
		if err := p.segment(m, walk.Entries(ctx, i), seg, key); err != nil {
			return err
		}
	}
	return nil
}

func newDumpPrinter(op *savepoint.Operator, ref stateRef, dec *savepoint.Decoder, raw bool, now int64, sink *dumpSink) *dumpPrinter {
	p := &dumpPrinter{sink: sink, dec: dec, raw: raw, now: now, state: ref.Keyed, voidNS: isVoid(ref),
		key: jsonvalue.For(op.Key)}
	p.direct = newDirectParts(op, ref, p.voidNS)
	if ref.Keyed != nil {
		p.namespace, p.mapKey, p.value = jsonvalue.For(ref.Keyed.Namespace), jsonvalue.For(ref.Keyed.MapKey), jsonvalue.For(ref.Keyed.Value)
	} else {
		p.namespace = jsonvalue.For(ref.Timers.Namespace)
	}
	return p
}

// keyMatch is a key given with --key: its bytes, when its serializer
// writes them, or else its value, which each entry's key is decoded to
// compare with.
type keyMatch struct {
	bytes []byte
	value any
	ser   serializers.Serializer
	// keyGroup is the key's key group, or -1 when the layout's hash of it
	// is not known, and every key group is read.
	keyGroup int
}

// parseKeyArg reads --key for the key serializer ser of op.
func parseKeyArg(op *savepoint.Operator, ser serializers.Serializer, arg string) (*keyMatch, error) {
	snap := ser.Snapshot()
	if snap.Kind == serializers.KindExternal {
		kg, ok := snap.External.(serializers.KeyGrouper)
		if !ok {
			return nil, usagef("--key: keys of type %s cannot be given on the command line", snap)
		}
		v, err := kg.ParseKey(arg)
		if err != nil {
			return nil, usagef("--key %q is not a %s key: %v", arg, snap, err)
		}
		k := &keyMatch{value: v, ser: ser, keyGroup: -1}
		if g, ok := kg.KeyGroup(v, op.MaxParallelism); ok && op.MaxParallelism > 0 {
			k.keyGroup = g
		}
		return k, nil
	}
	b, err := encodeKeyArg(ser, arg)
	if err != nil {
		return nil, err
	}
	k := &keyMatch{bytes: b, keyGroup: -1}
	if op.MaxParallelism > 0 {
		h, err := op.KeyHash.Sum(b)
		if err != nil {
			return nil, err
		}
		k.keyGroup = int(h % uint32(op.MaxParallelism))
	}
	return k, nil
}

// matches compares a stored key with k; past reports, for bytes, that the
// stored key sorts after k (a key matched by value is decoded in every
// entry, whose order says nothing).
func (k *keyMatch) matches(stored []byte) (match, past bool) {
	if k.bytes != nil {
		c := bytes.Compare(stored, k.bytes)
		return c == 0, c > 0
	}
	v, err := k.ser.DecodeAny(stored)
	return err == nil && reflect.DeepEqual(v, k.value), false
}

func isVoid(ref stateRef) bool {
	if ref.Keyed != nil {
		return ref.Keyed.Namespace.NamespaceKind() == serializers.KindVoid
	}
	return ref.Timers.Namespace.NamespaceKind() == serializers.KindVoid
}

// dumpPrinter turns the entries of a keyed state or timer service into
// output lines.
type dumpPrinter struct {
	sink   *dumpSink
	dec    *savepoint.Decoder
	raw    bool
	now    int64
	state  *savepoint.KeyedState // nil for timers
	voidNS bool
	// key, namespace, mapKey and value render the decoded parts in the
	// JSON conventions.
	key, namespace, mapKey, value func(any) any
	direct                        directParts
	// The previous entry's key and namespace, to number list elements.
	prevKey, prevNS []byte
	havePrev        bool
	index           int
	fields          fields
}

// segment prints the entries of one segment, or only those of key when it
// is set.
func (p *dumpPrinter) segment(m *savepoint.Metadata, it savepoint.EntryIterator, seg savepoint.Segment, key *keyMatch) error {
	defer it.Close()
	p.havePrev = false
	for n := uint64(0); it.Next(); n++ {
		e := it.Entry()
		if key != nil {
			if match, past := key.matches(e.Key); !match {
				// State records are sorted by key: once past it, it is
				// done. Timers are sorted by time and need the whole
				// segment.
				if past && p.state != nil {
					return nil
				}
				continue
			}
		}
		if err := p.entry(e); err != nil {
			if isDecodeErr(err) {
				return inspect.Undecodable(m, seg, n, err)
			}
			return err
		}
	}
	return it.Err()
}

func (p *dumpPrinter) entry(e *savepoint.Entry) error {
	list := p.state != nil && p.state.Kind == savepoint.List
	if list {
		if p.havePrev && bytes.Equal(e.Key, p.prevKey) && bytes.Equal(e.Namespace, p.prevNS) {
			p.index++
		} else {
			p.index, p.havePrev = 0, true
			p.prevKey = append(p.prevKey[:0], e.Key...)
			p.prevNS = append(p.prevNS[:0], e.Namespace...)
		}
	}
	// The line's fields are reused: the sink is done with them when it
	// returns.
	p.fields = p.fields[:0]
	f := &p.fields
	if p.raw {
		f.add("key", hex.EncodeToString(e.Key))
		if !p.voidNS {
			f.add("namespace", hex.EncodeToString(e.Namespace))
		}
		switch {
		case p.state == nil:
			f.add("timestamp", instant(e.Timestamp))
		case p.state.Kind == savepoint.Map:
			f.add("map_key", hex.EncodeToString(e.MapKey))
		case list:
			f.add("index", p.index)
		}
		if p.state != nil {
			f.add("value", hex.EncodeToString(e.Value))
		}
		return p.sink.write(*f)
	}
	if p.direct.ok {
		return p.fromBytes(e, f, list)
	}
	d, err := p.dec.Decode(e)
	if err != nil {
		return err
	}
	f.add("key", p.key(d.Key))
	if !p.voidNS {
		f.add("namespace", p.namespace(d.Namespace))
	}
	switch {
	case p.state == nil:
		f.add("timestamp", instant(d.Timestamp))
		return p.sink.write(*f)
	case p.state.Kind == savepoint.Map:
		f.add("map_key", p.mapKey(d.MapKey))
	case list:
		f.add("index", p.index)
	}
	f.add("value", p.value(d.Value))
	if d.HasTTL {
		f.add("ttl_last_modified", instant(d.LastModified))
		f.add("expired", p.state.TTL.Expired(d.LastModified, p.now))
	}
	return p.sink.write(*f)
}

// fromBytes writes the line of an entry whose parts are all of the kinds
// that directParts writes from their bytes: it validates them, which fails
// where decoding them fails, with the same error, and builds no values.
func (p *dumpPrinter) fromBytes(e *savepoint.Entry, f *fields, list bool) error {
	if err := p.dec.Validate(e); err != nil {
		return err
	}
	d := &p.direct
	d.key(f, "key", e.Key)
	if !p.voidNS {
		d.namespace(f, "namespace", e.Namespace)
	}
	switch {
	case p.state == nil:
		f.add("timestamp", instant(e.Timestamp))
		return p.sink.write(*f)
	case p.state.Kind == savepoint.Map:
		d.mapKey(f, "map_key", e.MapKey)
	case list:
		f.add("index", p.index)
	}
	v := e.Value
	if p.state.TTL != nil {
		lastModified := int64(binary.BigEndian.Uint64(v))
		d.value(f, "value", v[8:])
		f.add("ttl_last_modified", instant(lastModified))
		f.add("expired", p.state.TTL.Expired(lastModified, p.now))
		return p.sink.write(*f)
	}
	d.value(f, "value", v)
	return p.sink.write(*f)
}

// directParts write the parts of an entry straight from their stored
// bytes, as the values jsonvalue.For renders for them: dumps of states of
// strings and numbers then build no string or box per entry. ok says
// whether every part of the state has one.
type directParts struct {
	ok                            bool
	key, namespace, mapKey, value fromBytes
}

// fromBytes adds the value of valid stored bytes b to a line.
type fromBytes func(f *fields, name string, b []byte)

func directOf(snap serializers.Snapshot) fromBytes {
	switch snap.Kind {
	case serializers.KindString:
		return func(f *fields, name string, b []byte) { f.addText(name, b) }
	case serializers.KindInt64:
		return func(f *fields, name string, b []byte) { f.add(name, int64(binary.BigEndian.Uint64(b))) }
	case serializers.KindInt32:
		return func(f *fields, name string, b []byte) { f.add(name, int32(binary.BigEndian.Uint32(b))) }
	case serializers.KindBool:
		return func(f *fields, name string, b []byte) { f.add(name, b[0] == 1) }
	}
	return nil
}

func newDirectParts(op *savepoint.Operator, ref stateRef, voidNS bool) directParts {
	d := directParts{key: directOf(op.Key)}
	if ref.Keyed == nil {
		d.namespace = directOf(ref.Timers.Namespace)
		d.ok = d.key != nil && (voidNS || d.namespace != nil)
		return d
	}
	ks := ref.Keyed
	d.namespace, d.mapKey, d.value = directOf(ks.Namespace), directOf(ks.MapKey), directOf(ks.Value)
	d.ok = d.key != nil && (voidNS || d.namespace != nil) && (ks.Kind != savepoint.Map || d.mapKey != nil) && d.value != nil
	return d
}

func dumpOperatorState(s *savepoint.OperatorState, raw bool, sink *dumpSink) error {
	ser, err := serializers.Restore(s.Element)
	if err != nil {
		return inspect.MetadataCorrupt(fmt.Sprintf("operator state %q", s.Name), err)
	}
	for sub, elems := range s.Subtasks {
		for i, b := range elems {
			f := fields{}
			f.add("subtask", sub)
			f.add("index", i)
			v, err := decodeOrHex(ser, jsonvalue.For(s.Element), b, raw)
			if err != nil {
				return inspect.MetadataCorrupt(fmt.Sprintf("operator state %q subtask %d element %d", s.Name, sub, i), err)
			}
			f.add("value", v)
			if err := sink.write(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func dumpBroadcast(s *savepoint.BroadcastState, o dumpOptions, sink *dumpSink) error {
	keySer, err := serializers.Restore(s.Key)
	if err != nil {
		return inspect.MetadataCorrupt(fmt.Sprintf("broadcast state %q", s.Name), err)
	}
	valSer, err := serializers.Restore(s.Value)
	if err != nil {
		return inspect.MetadataCorrupt(fmt.Sprintf("broadcast state %q", s.Name), err)
	}
	keyJSON, valJSON := jsonvalue.For(s.Key), jsonvalue.For(s.Value)
	var only *keyMatch
	if o.key != "" {
		if only, err = parseKeyArg(&savepoint.Operator{}, keySer, o.key); err != nil {
			return err
		}
	}
	for i, e := range s.Entries {
		if only != nil {
			if match, _ := only.matches(e.Key); !match {
				continue
			}
		}
		k, err := decodeOrHex(keySer, keyJSON, e.Key, o.raw)
		if err != nil {
			return inspect.MetadataCorrupt(fmt.Sprintf("broadcast state %q entry %d: key", s.Name, i), err)
		}
		v, err := decodeOrHex(valSer, valJSON, e.Value, o.raw)
		if err != nil {
			return inspect.MetadataCorrupt(fmt.Sprintf("broadcast state %q entry %d: value", s.Name, i), err)
		}
		var f fields
		f.add("key", k)
		f.add("value", v)
		if err := sink.write(f); err != nil {
			return err
		}
	}
	return nil
}

func isDecodeErr(err error) bool { return errors.Is(err, serializers.ErrDecode) }

func decodeOrHex(ser serializers.Serializer, render func(any) any, b []byte, raw bool) (any, error) {
	if raw {
		return hex.EncodeToString(b), nil
	}
	v, err := ser.DecodeAny(b)
	return render(v), err
}

// parseKeyGroups reads --key-groups: A-B or A, within the max parallelism.
func parseKeyGroups(s string, maxParallelism int) (keygroup.Range, error) {
	from, to, isRange := strings.Cut(s, "-")
	a, errA := strconv.Atoi(from)
	b, errB := a, error(nil)
	if isRange {
		b, errB = strconv.Atoi(to)
	}
	if errA != nil || errB != nil || a < 0 || b < a || b >= maxParallelism {
		return keygroup.Range{}, usagef("--key-groups %q: want A-B with 0 <= A <= B < %d (the max parallelism)", s, maxParallelism)
	}
	return keygroup.Range{Start: a, End: b}, nil
}
