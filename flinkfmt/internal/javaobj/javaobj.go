package javaobj

import (
	"errors"
	"fmt"
	"math"

	"github.com/stateproc/stateproc/flinkfmt/internal/wire"
)

// Stream magic and version that start every object stream.
const (
	Magic   = 0xACED
	Version = 5
)

// Type codes of the grammar.
const (
	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcException      = 0x7B
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E
	baseWireHandle   = 0x7E0000
)

// Class description flags.
const (
	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08
	scEnum           = 0x10
)

// ErrMalformed is wrapped by every error about a stream that does not parse
// or exceeds a limit.
var ErrMalformed = errors.New("javaobj: malformed object stream")

// Limits bound the parser. Zero fields take the defaults.
type Limits struct {
	// MaxDepth bounds how deeply objects nest.
	MaxDepth int
	// MaxHandles bounds the handle table.
	MaxHandles int
	// MaxValues bounds the values built in total, arrays' elements included.
	MaxValues int
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = 64
	}
	if l.MaxHandles <= 0 {
		l.MaxHandles = 1 << 16
	}
	if l.MaxValues <= 0 {
		l.MaxValues = 1 << 20
	}
	return l
}

// ClassDesc describes a class as the stream records it.
type ClassDesc struct {
	Name   string
	UID    int64
	Flags  byte
	Fields []Field
	// Annotations are what the class's annotateClass wrote.
	Annotations []any
	Super       *ClassDesc
	// Proxy lists the interfaces of a dynamic proxy class.
	Proxy []string
}

// Field is one serializable field of a class.
type Field struct {
	// Type is the type code: B C D F I J S Z for primitives, L or [ for
	// objects.
	Type byte
	Name string
	// Class is the field's JVM type signature for object fields.
	Class string
}

// Object is an instance with its class data, superclass first.
type Object struct {
	Class *ClassDesc
	Data  []ClassData
}

// ClassData is the part of an object that one class of its hierarchy wrote.
type ClassData struct {
	Class *ClassDesc
	// Values holds the serializable fields in the order of Class.Fields.
	Values []any
	// Annotations is what a writeObject or writeExternal method wrote after
	// (or instead of) the fields: objects and BlockData.
	Annotations []any
}

// Field returns the value of the named field, looking from the most
// derived class up.
func (o *Object) Field(name string) (any, bool) {
	for i := len(o.Data) - 1; i >= 0; i-- {
		d := o.Data[i]
		for j, f := range d.Class.Fields {
			if f.Name == name && j < len(d.Values) {
				return d.Values[j], true
			}
		}
	}
	return nil, false
}

// Array is an array instance.
type Array struct {
	Class *ClassDesc
	// Elems holds the elements: Go primitives for primitive arrays (bytes
	// are kept as one []byte in Bytes instead).
	Elems []any
	Bytes []byte
}

// Enum is an enum constant.
type Enum struct {
	Class    *ClassDesc
	Constant string
}

// BlockData is raw data a writeObject method wrote.
type BlockData []byte

// Class is a java.lang.Class instance.
type Class struct{ Desc *ClassDesc }

// Parse reads one stream header and one object from b and returns the
// object and the number of bytes it took.
func Parse(b []byte, lim Limits) (any, int, error) {
	p := NewParser(wire.New(b, 0), lim)
	if err := p.Header(); err != nil {
		return nil, 0, err
	}
	v, err := p.Content()
	if err != nil {
		return nil, 0, err
	}
	return v, p.r.Pos(), nil
}

// Parser reads contents from a Buf.
type Parser struct {
	r       *wire.Buf
	lim     Limits
	handles []any
	values  int
	depth   int
}

// NewParser returns a parser reading at r's position.
func NewParser(r *wire.Buf, lim Limits) *Parser {
	return &Parser{r: r, lim: lim.withDefaults()}
}

func (p *Parser) fail(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrMalformed, p.r.Offset(), fmt.Sprintf(format, args...))
}

func (p *Parser) check() error {
	if err := p.r.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// Header reads the stream magic and version.
func (p *Parser) Header() error {
	m, v := p.r.U16(), p.r.U16()
	if err := p.check(); err != nil {
		return err
	}
	if m != Magic || v != Version {
		return p.fail("stream header %04x %04x, want aced 0005", m, v)
	}
	return nil
}

func (p *Parser) count(n int) error {
	p.values += n
	if p.values > p.lim.MaxValues {
		return p.fail("more than %d values", p.lim.MaxValues)
	}
	return nil
}

func (p *Parser) newHandle(v any) int {
	p.handles = append(p.handles, v)
	return len(p.handles) - 1
}

func (p *Parser) handleRoom() error {
	if len(p.handles) >= p.lim.MaxHandles {
		return p.fail("more than %d handles", p.lim.MaxHandles)
	}
	return nil
}

// Content reads one content item: an object, or BlockData.
func (p *Parser) Content() (any, error) {
	if p.depth >= p.lim.MaxDepth {
		return nil, p.fail("objects nest deeper than %d", p.lim.MaxDepth)
	}
	p.depth++
	defer func() { p.depth-- }()
	if err := p.count(1); err != nil {
		return nil, err
	}
	tc := p.r.U8()
	if err := p.check(); err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		h := int64(uint32(p.r.I32())) - baseWireHandle
		if err := p.check(); err != nil {
			return nil, err
		}
		if h < 0 || h >= int64(len(p.handles)) {
			return nil, p.fail("reference to unknown handle %#x", h+baseWireHandle)
		}
		return p.handles[h], nil
	case tcClassDesc, tcProxyClassDesc:
		return p.classDescBody(tc)
	case tcObject:
		return p.object()
	case tcString, tcLongString:
		return p.str(tc)
	case tcArray:
		return p.array()
	case tcClass:
		d, err := p.classDesc()
		if err != nil {
			return nil, err
		}
		if err := p.handleRoom(); err != nil {
			return nil, err
		}
		c := &Class{Desc: d}
		p.newHandle(c)
		return c, nil
	case tcEnum:
		d, err := p.classDesc()
		if err != nil {
			return nil, err
		}
		if err := p.handleRoom(); err != nil {
			return nil, err
		}
		e := &Enum{Class: d}
		p.newHandle(e)
		v, err := p.Content()
		if err != nil {
			return nil, err
		}
		s, ok := v.(string)
		if !ok {
			return nil, p.fail("enum constant name is %T, not a string", v)
		}
		e.Constant = s
		return e, nil
	case tcBlockData:
		n := int(p.r.U8())
		b := p.r.Raw(n, "block data")
		return BlockData(b), p.check()
	case tcBlockDataLong:
		n := p.r.Count("block data length", 1)
		b := p.r.Raw(n, "block data")
		return BlockData(b), p.check()
	case tcReset:
		p.handles = p.handles[:0]
		return p.Content()
	case tcException:
		return nil, p.fail("the stream holds an exception that aborted its writing")
	case tcEndBlockData:
		return nil, p.fail("unexpected end of block data")
	}
	return nil, p.fail("unknown type code %#02x", tc)
}

// classDesc reads a classDesc: a new one, a reference to one, or null.
func (p *Parser) classDesc() (*ClassDesc, error) {
	v, err := p.Content()
	if err != nil {
		return nil, err
	}
	switch d := v.(type) {
	case nil:
		return nil, nil
	case *ClassDesc:
		return d, nil
	}
	return nil, p.fail("expected a class description, found %T", v)
}

func (p *Parser) classDescBody(tc byte) (*ClassDesc, error) {
	if err := p.handleRoom(); err != nil {
		return nil, err
	}
	d := &ClassDesc{}
	if tc == tcProxyClassDesc {
		p.newHandle(d)
		n := p.r.Count("proxy interfaces", 2)
		for i := 0; i < n; i++ {
			d.Proxy = append(d.Proxy, p.r.UTF("proxy interface"))
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		d.Flags = scSerializable
	} else {
		d.Name = p.r.UTF("class name")
		d.UID = p.r.I64()
		p.newHandle(d)
		d.Flags = p.r.U8()
		n := int(p.r.U16())
		if err := p.check(); err != nil {
			return nil, err
		}
		if n*3 > p.r.Len() {
			return nil, p.fail("class %s declares %d fields, more than the bytes that remain", d.Name, n)
		}
		if d.Flags&scExternalizable != 0 && d.Flags&scSerializable != 0 {
			return nil, p.fail("class %s is both serializable and externalizable", d.Name)
		}
		for i := 0; i < n; i++ {
			f := Field{Type: p.r.U8(), Name: p.r.UTF("field name")}
			if err := p.check(); err != nil {
				return nil, err
			}
			switch f.Type {
			case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
			case 'L', '[':
				v, err := p.Content()
				if err != nil {
					return nil, err
				}
				s, ok := v.(string)
				if !ok {
					return nil, p.fail("type of field %s.%s is %T, not a string", d.Name, f.Name, v)
				}
				f.Class = s
			default:
				return nil, p.fail("field %s.%s has unknown type code %q", d.Name, f.Name, f.Type)
			}
			d.Fields = append(d.Fields, f)
		}
	}
	ann, err := p.annotations()
	if err != nil {
		return nil, err
	}
	d.Annotations = ann
	if d.Super, err = p.classDesc(); err != nil {
		return nil, err
	}
	return d, nil
}

// annotations reads contents up to TC_ENDBLOCKDATA.
func (p *Parser) annotations() ([]any, error) {
	var out []any
	for {
		if p.r.Len() > 0 && p.r.Rest()[0] == tcEndBlockData {
			p.r.U8()
			return out, nil
		}
		if p.r.Len() == 0 {
			return nil, p.fail("stream ends inside annotations")
		}
		v, err := p.Content()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (p *Parser) str(tc byte) (string, error) {
	if err := p.handleRoom(); err != nil {
		return "", err
	}
	var n int
	if tc == tcString {
		n = int(p.r.U16())
	} else {
		l := p.r.I64()
		if l < 0 || l > int64(p.r.Len()) {
			return "", p.fail("long string of %d bytes, %d remain", l, p.r.Len())
		}
		n = int(l)
	}
	b := p.r.Raw(n, "string")
	if err := p.check(); err != nil {
		return "", err
	}
	s, err := wire.DecodeModifiedUTF8(b)
	if err != nil {
		return "", p.fail("%v", err)
	}
	p.newHandle(s)
	return s, nil
}

var primSize = map[byte]int{'B': 1, 'Z': 1, 'C': 2, 'S': 2, 'I': 4, 'F': 4, 'J': 8, 'D': 8}

func (p *Parser) array() (*Array, error) {
	d, err := p.classDesc()
	if err != nil {
		return nil, err
	}
	if d == nil || len(d.Name) < 2 || d.Name[0] != '[' {
		return nil, p.fail("array of a class that is not an array type")
	}
	if err := p.handleRoom(); err != nil {
		return nil, err
	}
	a := &Array{Class: d}
	p.newHandle(a)
	elem := d.Name[1]
	size, prim := primSize[elem]
	if !prim {
		size = 1
	}
	n := p.r.Count("array length", size)
	if err := p.check(); err != nil {
		return nil, err
	}
	if elem == 'B' {
		a.Bytes = p.r.Raw(n, "byte array")
		return a, p.check()
	}
	if err := p.count(n); err != nil {
		return nil, err
	}
	a.Elems = make([]any, 0, n)
	for i := 0; i < n; i++ {
		var v any
		if prim {
			v = p.prim(elem)
		} else if v, err = p.Content(); err != nil {
			return nil, err
		}
		a.Elems = append(a.Elems, v)
	}
	return a, p.check()
}

func (p *Parser) prim(t byte) any {
	switch t {
	case 'B':
		return int8(p.r.U8())
	case 'Z':
		return p.r.Bool()
	case 'C':
		return p.r.U16()
	case 'S':
		return int16(p.r.U16())
	case 'I':
		return p.r.I32()
	case 'F':
		return math.Float32frombits(uint32(p.r.I32()))
	case 'J':
		return p.r.I64()
	case 'D':
		return math.Float64frombits(uint64(p.r.I64()))
	}
	return nil
}

func (p *Parser) object() (*Object, error) {
	d, err := p.classDesc()
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, p.fail("object with a null class")
	}
	if err := p.handleRoom(); err != nil {
		return nil, err
	}
	o := &Object{Class: d}
	p.newHandle(o)
	var chain []*ClassDesc
	for c := d; c != nil; c = c.Super {
		if len(chain) >= p.lim.MaxDepth {
			return nil, p.fail("class hierarchy deeper than %d", p.lim.MaxDepth)
		}
		chain = append(chain, c)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		cd := ClassData{Class: c}
		switch {
		case c.Flags&scExternalizable != 0:
			if c.Flags&scBlockData == 0 {
				return nil, p.fail("externalizable class %s written with protocol version 1 cannot be walked", c.Name)
			}
			if cd.Annotations, err = p.annotations(); err != nil {
				return nil, err
			}
		case c.Flags&scSerializable != 0:
			for _, f := range c.Fields {
				var v any
				if f.Type == 'L' || f.Type == '[' {
					if v, err = p.Content(); err != nil {
						return nil, err
					}
				} else {
					v = p.prim(f.Type)
					if err := p.check(); err != nil {
						return nil, err
					}
				}
				cd.Values = append(cd.Values, v)
			}
			if c.Flags&scWriteMethod != 0 {
				if cd.Annotations, err = p.annotations(); err != nil {
					return nil, err
				}
			}
		}
		o.Data = append(o.Data, cd)
	}
	return o, nil
}
