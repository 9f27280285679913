package typeser

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stateproc/stateproc/flinkfmt/internal/javaobj"
	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// Flink 1.3 to 1.6 did not write serializer snapshots that restore a
// serializer by themselves: they wrote the serializer Java-serialized,
// beside a "config snapshot". Flink 1.7 to 1.16 still wrote that form for
// serializers without a new snapshot, behind adapterVersion. The
// serializer objects are plain Java serialization of a few Flink classes,
// so the codec is rebuilt from their fields.

// adapterVersion is TypeSerializerSnapshot.ADAPTER_VERSION: the snapshot is
// a legacy TypeSerializerConfigSnapshot, preceded by its serializer.
const adapterVersion = 0x7A53C4F0

// javaSerializerProxyVersion is TypeSerializerSerializationProxy's version.
const javaSerializerProxyVersion = 1

// javaLimits bound the Java-serialized serializers.
var javaLimits = javaobj.Limits{MaxDepth: 2 * MaxDepth, MaxHandles: 1 << 12, MaxValues: 1 << 16}

// javaSerializer reads TypeSerializerSerializationProxy: its version and
// the length-prefixed Java-serialized serializer.
func (p *parser) javaSerializer(what string) *Serializer {
	if v := p.r.I32(); v != javaSerializerProxyVersion && !p.failed() {
		p.bad("%s: serializer proxy version %d, want %d", what, v, javaSerializerProxyVersion)
		return nil
	}
	start := p.r.Offset() + 4
	b := p.r.Sized(what + " Java-serialized serializer")
	if p.failed() {
		return nil
	}
	v, n, err := javaobj.Parse(b, javaLimits)
	if err != nil {
		p.bad("%s: offset %d: %v", what, start, err)
		return nil
	}
	if n != len(b) {
		p.bad("%s: %d bytes follow the Java-serialized serializer", what, len(b)-n)
		return nil
	}
	s, err := FromJava(v)
	if err != nil {
		p.err = fmt.Errorf("%s: %w", what, err)
		return nil
	}
	return s
}

// restoreAdapter reads a legacy config snapshot behind adapterVersion: the
// Java-serialized serializer, then the config snapshot's own fields, which
// restoring does not need but which must be walked past.
func (p *parser) restoreAdapter(class string) *Serializer {
	s := p.javaSerializer(class)
	if p.failed() {
		return nil
	}
	p.legacyConfig(class)
	if p.failed() {
		return nil
	}
	return s
}

// legacyConfig walks the fields a TypeSerializerConfigSnapshot subclass
// writes: its version, then what the class adds.
func (p *parser) legacyConfig(class string) {
	p.r.I32()
	switch {
	case class == "org.apache.flink.api.common.typeutils.ParameterlessTypeSerializerConfig":
		p.r.UTF("serialization format identifier")
	case class == "org.apache.flink.test.migration.TypeSerializerSnapshotMigrationITCase$TestSerializerSnapshot":
		p.r.UTF("test serializer payload")
	case class == "org.apache.flink.api.java.typeutils.runtime.TupleSerializerConfigSnapshot":
		p.SerializersAndConfigs(class)
		p.javaObject(class + " tuple class")
	case class == "org.apache.flink.formats.avro.typeutils.AvroSerializer$AvroSchemaSerializerConfigSnapshot":
		p.r.UTF("Avro schema")
	case compositeConfigs[class]:
		p.SerializersAndConfigs(class)
	default:
		p.unsupported(class, adapterVersion, "legacy config snapshot of this class")
	}
}

// compositeConfigs are CompositeTypeSerializerConfigSnapshot subclasses
// that add nothing to its nested serializers and configs.
var compositeConfigs = map[string]bool{
	"org.apache.flink.streaming.api.operators.TimerSerializer$TimerSerializerConfigSnapshot":       true,
	"org.apache.flink.api.common.typeutils.base.CollectionSerializerConfigSnapshot":                true,
	"org.apache.flink.api.common.typeutils.base.MapSerializerConfigSnapshot":                       true,
	"org.apache.flink.api.java.typeutils.runtime.EitherSerializerConfigSnapshot":                   true,
	"org.apache.flink.api.common.typeutils.CompositeTypeSerializerConfigSnapshot":                  true,
	"org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializer$TtlSerializerConfigSnapshot": true,
}

// javaObject walks one Java-serialized object written straight into the
// stream.
func (p *parser) javaObject(what string) any {
	if p.failed() {
		return nil
	}
	rest := p.r.Rest()
	v, n, err := javaobj.Parse(rest, javaLimits)
	if err != nil {
		p.bad("%s: %v", what, err)
		return nil
	}
	p.r.Raw(n, what)
	return v
}

// SerializersAndConfigs reads TypeSerializerSerializationUtil's
// writeSerializersAndConfigsWithResilience: a count, two offsets per pair
// into a buffer of the given length, and the buffer, which holds each
// Java-serialized serializer and its config snapshot. The serializers are
// restored; the config snapshots, framed by the offsets, are not needed.
func (p *parser) SerializersAndConfigs(what string) []*Serializer {
	n := p.r.Count(what+" serializer count", 8)
	offs := make([]int32, 0, 2*n)
	for i := 0; i < 2*n && !p.failed(); i++ {
		offs = append(offs, p.r.I32())
	}
	base := p.r.Offset() + 4
	buf := p.r.Sized(what + " serializers")
	if p.failed() {
		return nil
	}
	out := make([]*Serializer, 0, n)
	for i := 0; i < n; i++ {
		off := offs[2*i]
		if off < 0 || int(off) > len(buf) {
			p.bad("%s: serializer %d at offset %d of %d bytes", what, i, off, len(buf))
			return nil
		}
		sub := &parser{r: wire.New(buf[off:], base+int64(off)), depth: p.depth}
		s := sub.javaSerializer(what)
		if errors.Is(sub.err, errNoAvroSchema) && int(offs[2*i+1]) >= 0 && int(offs[2*i+1]) <= len(buf) {
			// Flink 1.6 Avro serializers of generated classes record the
			// schema only in their config snapshot.
			cfg := &parser{r: wire.New(buf[offs[2*i+1]:], base+int64(offs[2*i+1])), depth: p.depth}
			s = cfg.avroConfig()
			sub = cfg
		}
		if sub.err != nil || sub.r.Err() != nil {
			p.err = sub.err
			if p.err == nil {
				p.bad("%v", sub.r.Err())
			}
			return nil
		}
		out = append(out, s)
	}
	return out
}

// ReadLegacySerializers reads writeSerializersAndConfigsWithResilience's
// output from r (Flink 1.3 to 1.6 state meta infos and key serializers).
func ReadLegacySerializers(r *wire.Buf) ([]*Serializer, error) {
	p := &parser{r: r}
	out := p.SerializersAndConfigs("legacy serializers")
	if p.err != nil {
		return nil, p.err
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return out, nil
}

const (
	basePkg    = "org.apache.flink.api.common.typeutils.base."
	runtimePkg = "org.apache.flink.api.java.typeutils.runtime."
)

// javaSimple maps serializer classes without parameters to their codecs.
var javaSimple = map[string]struct {
	t Type
	c codec
}{
	basePkg + "BooleanSerializer":                                              {Type{Kind: KindBool}, primCodec{KindBool}},
	basePkg + "ByteSerializer":                                                 {Type{Kind: KindInt8}, primCodec{KindInt8}},
	basePkg + "ShortSerializer":                                                {Type{Kind: KindInt16}, primCodec{KindInt16}},
	basePkg + "IntSerializer":                                                  {Type{Kind: KindInt32}, primCodec{KindInt32}},
	basePkg + "LongSerializer":                                                 {Type{Kind: KindInt64}, primCodec{KindInt64}},
	basePkg + "FloatSerializer":                                                {Type{Kind: KindFloat32}, primCodec{KindFloat32}},
	basePkg + "DoubleSerializer":                                               {Type{Kind: KindFloat64}, primCodec{KindFloat64}},
	basePkg + "CharSerializer":                                                 {Type{Kind: KindChar}, primCodec{KindChar}},
	basePkg + "StringSerializer":                                               {Type{Kind: KindString}, stringCodec{}},
	basePkg + "BigIntSerializer":                                               {Type{Kind: KindBigInt}, bigIntCodec{}},
	basePkg + "BigDecSerializer":                                               {Type{Kind: KindDecimal}, bigDecCodec{}},
	basePkg + "DateSerializer":                                                 {Type{Kind: KindTimestamp, Class: "java.util.Date"}, dateCodec{}},
	basePkg + "VoidSerializer":                                                 {Type{Kind: KindVoid}, fixedCodec{n: 1}},
	basePkg + "array.BytePrimitiveArraySerializer":                             {Type{Kind: KindBytes}, bytesCodec{}},
	"org.apache.flink.runtime.state.VoidNamespaceSerializer":                   {Type{Kind: KindVoid, Class: "VoidNamespace"}, fixedCodec{n: 1, value: VoidNamespace{}}},
	"org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer":   {Type{Kind: KindWindow}, windowCodec{}},
	"org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer": {Type{Kind: KindGlobalWindow}, fixedCodec{n: 1, value: GlobalWindow{}}},
	"org.apache.flink.runtime.state.JavaSerializer":                            {Type{Kind: KindOpaque, Class: "java.io.Serializable"}, javaCodec{serializer: "org.apache.flink.runtime.state.JavaSerializer"}},
}

// FromJava rebuilds a serializer from its Java-serialized object.
func FromJava(v any) (*Serializer, error) { return fromJava(v, 0) }

func fromJava(v any, depth int) (*Serializer, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: serializers nest deeper than %d", ErrSnapshot, MaxDepth)
	}
	o, ok := v.(*javaobj.Object)
	if !ok {
		return nil, fmt.Errorf("%w: a Java-serialized serializer is %T, not an object", ErrSnapshot, v)
	}
	class := o.Class.Name
	if s, ok := javaSimple[class]; ok {
		t := s.t
		t.Serializer = class
		return newSerializer(class, 0, &t, s.c), nil
	}
	field := func(name string) (*Serializer, error) {
		f, ok := o.Field(name)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no field %s", ErrSnapshot, class, name)
		}
		return fromJava(f, depth+1)
	}
	mk := func(t *Type, c codec, args ...*Serializer) (*Serializer, error) {
		t.Serializer = class
		s := newSerializer(class, 0, t, c)
		s.Args = args
		return s, nil
	}
	switch class {
	case runtimePkg + "TupleSerializer":
		arr, ok := fieldOf(o, "fieldSerializers").(*javaobj.Array)
		if !ok {
			return nil, fmt.Errorf("%w: %s without field serializers", ErrSnapshot, class)
		}
		name := ""
		if c, ok := fieldOf(o, "tupleClass").(*javaobj.Class); ok && c.Desc != nil {
			name = c.Desc.Name
		}
		var fields []*Serializer
		for _, e := range arr.Elems {
			f, err := fromJava(e, depth+1)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
		}
		t, c := record(name, fields, nil)
		return mk(t, c, fields...)
	case basePkg + "ListSerializer", "org.apache.flink.runtime.state.ArrayListSerializer":
		e, err := field("elementSerializer")
		if err != nil {
			return nil, err
		}
		return mk(&Type{Kind: KindList, Elem: e.Type}, listCodec{elem: e.c}, e)
	case basePkg + "MapSerializer":
		k, err := field("keySerializer")
		if err != nil {
			return nil, err
		}
		val, err := field("valueSerializer")
		if err != nil {
			return nil, err
		}
		return mk(&Type{Kind: KindMap, Key: k.Type, Value: val.Type}, mapCodec{key: k.c, value: val.c}, k, val)
	case runtimePkg + "EitherSerializer":
		l, err := field("leftSerializer")
		if err != nil {
			return nil, err
		}
		r, err := field("rightSerializer")
		if err != nil {
			return nil, err
		}
		return mk(&Type{Kind: KindEither, Key: l.Type, Value: r.Type}, eitherCodec{left: l.c, right: r.c}, l, r)
	case "org.apache.flink.streaming.api.operators.TimerSerializer":
		k, err := field("keySerializer")
		if err != nil {
			return nil, err
		}
		ns, err := field("namespaceSerializer")
		if err != nil {
			return nil, err
		}
		return mk(&Type{Kind: KindTimer, Key: k.Type, Value: ns.Type}, timerCodec{key: k.c, ns: ns.c}, k, ns)
	case "org.apache.flink.test.migration.TypeSerializerSnapshotMigrationITCase$TestSerializer":
		return field("serializer")
	case "org.apache.flink.formats.avro.typeutils.AvroSerializer":
		schema, _ := fieldOf(o, "schemaString").(string)
		typ := ""
		if c, ok := fieldOf(o, "type").(*javaobj.Class); ok && c.Desc != nil {
			typ = c.Desc.Name
		}
		if schema == "" {
			return nil, fmt.Errorf("%w: %s of %s", errNoAvroSchema, class, typ)
		}
		t, c, err := avroType(typ, schema)
		if err != nil {
			return nil, err
		}
		return mk(t, c)
	case runtimePkg + "kryo.KryoSerializer":
		typ := "java.lang.Object"
		if c, ok := fieldOf(o, "type").(*javaobj.Class); ok && c.Desc != nil {
			typ = c.Desc.Name
		}
		return mk(&Type{Kind: KindOpaque, Class: typ}, kryoCodec{class: typ, serializer: class})
	}
	if strings.HasSuffix(class, "Serializer") {
		return nil, fmt.Errorf("%w: Java-serialized %s", ErrUnsupported, class)
	}
	return nil, fmt.Errorf("%w: Java-serialized %s is not a serializer this package knows", ErrUnsupported, class)
}

// errNoAvroSchema is the error of an Avro serializer that records only
// its class; the schema is in its config snapshot.
var errNoAvroSchema = fmt.Errorf("%w: Avro serializer without a schema", ErrUnsupported)

const avroConfigClass = "org.apache.flink.formats.avro.typeutils.AvroSerializer$AvroSchemaSerializerConfigSnapshot"

// avroConfig reads a TypeSerializerConfigSnapshotSerializationProxy that
// holds an Avro config snapshot: proxy version, class, version, schema.
func (p *parser) avroConfig() *Serializer {
	if v := p.r.I32(); v != 1 && !p.failed() {
		p.bad("config snapshot proxy version %d, want 1", v)
		return nil
	}
	class := p.r.UTF("config snapshot class")
	p.r.I32()
	schema := p.r.UTF("Avro schema")
	if p.failed() {
		return nil
	}
	if class != avroConfigClass {
		p.unsupported(class, 0, "an Avro serializer without a schema and with this config snapshot")
		return nil
	}
	t, c, err := avroType("", schema)
	if err != nil {
		p.err = err
		return nil
	}
	t.Serializer = class
	return newSerializer(class, 0, t, c)
}

func fieldOf(o *javaobj.Object, name string) any {
	v, _ := o.Field(name)
	return v
}

// ReadJavaSerializer reads a Java-serialized serializer written straight
// into the stream, with no length (Flink 1.3 and 1.4.0 timer services).
func ReadJavaSerializer(r *wire.Buf) (*Serializer, error) {
	p := &parser{r: r}
	v := p.javaObject("Java-serialized serializer")
	if p.err != nil {
		return nil, p.err
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return FromJava(v)
}
