package serializers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/stateproc/stateproc/internal/avrobin"
)

// An avroPlan reads data written with one Avro schema and writes it as
// another, following the specification's schema resolution. Compiling a
// plan is the compatibility check; running it is the migration. The plan of
// a schema against itself validates a datum and writes it in canonical form
// (arrays and maps as one block, map entries sorted by key).
//
// The plan works on bytes, not on Go values: hamba's resolver accepts some
// pairs the specification refuses (logical type changes) and refuses some it
// allows (a writer union whose branches all promote to the reader's type).
//
// The specification signals an error only when a datum is read: a writer
// union branch that no reader type matches makes the values that use it
// unreadable, not the schema. The plan keeps such a branch as an
// opUnreadable node, so that data which does not use it migrates, and lists
// it in unreadable. A writer type none of whose values can be read is
// refused when the plan is compiled.
type avroPlan struct {
	root *avroNode
	// same: writer and reader have the same Parsing Canonical Form (and the
	// same logical types), so the writer's bytes are valid reader bytes.
	same bool
	// hasMap: the reader has a map somewhere, so hamba's encoding needs
	// sorting.
	hasMap bool
	// hasString: the writer has a string somewhere, which hamba writes
	// without checking that it is UTF-8.
	hasString bool
	// changes says, for a plan that is not same, what differs.
	changes []string
	// unreadable says which writer union branches have no reading.
	unreadable []string
}

type avroOp uint8

const (
	opNull avroOp = iota
	opBool
	opInt
	opLong
	opFloat
	opDouble
	opBytes // bytes and string: the same binary form, text tells them apart
	opFixed
	opEnum
	opArray
	opMap
	opRecord
	opUnion   // a writer union: read the branch index, resolve that branch
	opToUnion // a non-union writer value becomes a branch of a reader union
	opIntToLong
	opIntToFloat
	opIntToDouble
	opLongToFloat
	opLongToDouble
	opFloatToDouble
	opUnreadable // a writer union branch that the reader cannot read: msg says why
)

type avroNode struct {
	op avroOp
	// same: this node passes the writer's bytes through unchanged, not
	// counting its children.
	same bool
	// minSize is the fewest bytes a writer datum of this node takes; counts
	// read from the input are checked against it.
	minSize int
	// name is the record name for error messages.
	name string

	size     int           // opFixed
	text     textCheck     // opBytes
	decimal  *decimalLimit // opBytes, opFixed: a decimal's precision
	elem     *avroNode     // opArray items, opMap values, opToUnion value
	index    int           // opToUnion: the reader's branch
	branches []unionBranch // opUnion, by writer branch
	symbols  []int32       // opEnum: the reader's index of each writer symbol, -1 for none
	// writerSymbols names the writer's symbols for the error about one the
	// reader lacks (opEnum).
	writerSymbols []string
	fields        []fieldStep   // opRecord, in writer order
	readers       []readerField // opRecord, in reader order
	inOrder       bool          // opRecord: writer fields arrive in reader order
	msg           string        // opUnreadable
	// zeroOut: the reader's items take no bytes, the writer's some
	// (opArray); they count towards the reader's bound on such items.
	zeroOut bool
}

// textCheck says whether an opBytes datum must be UTF-8.
type textCheck uint8

const (
	textNone      textCheck = iota
	textString              // the writer's string
	textFromBytes           // the writer's bytes, read as a string
)

type unionBranch struct {
	index int // the reader's branch, or -1 when the reader is not a union
	node  *avroNode
}

type fieldStep struct {
	name string
	node *avroNode
	out  int // the reader field it fills, or -1 to skip it
}

type readerField struct {
	fromWriter bool
	def        []byte // the encoded default when !fromWriter
}

// Shared leaves: plans never modify nodes after compiling them.
var (
	nodeNull   = &avroNode{op: opNull, same: true}
	nodeBool   = &avroNode{op: opBool, same: true, minSize: 1}
	nodeInt    = &avroNode{op: opInt, same: true, minSize: 1}
	nodeLong   = &avroNode{op: opLong, same: true, minSize: 1}
	nodeFloat  = &avroNode{op: opFloat, same: true, minSize: 4}
	nodeDouble = &avroNode{op: opDouble, same: true, minSize: 8}
	nodeBytes  = &avroNode{op: opBytes, same: true, minSize: 1}
	nodeString = &avroNode{op: opBytes, same: true, minSize: 1, text: textString}
)

// avroMismatch is why a writer schema cannot be read with a reader schema.
type avroMismatch struct {
	path string // where: OpenRequest.prompt_tokens; empty at the top
	msg  string
	// noBranch: the writer type matches no branch of a reader union.
	noBranch bool
}

func (e *avroMismatch) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func mismatch(path, format string, args ...any) error {
	return &avroMismatch{path: path, msg: fmt.Sprintf(format, args...)}
}

// avroMismatches are every reason, in schema order, why a writer schema
// cannot be read: a compatibility check names them all, not the first.
type avroMismatches []error

func (e avroMismatches) Error() string {
	msgs := make([]string, len(e))
	for i, m := range e {
		msgs[i] = m.Error()
	}
	return strings.Join(msgs, "; ")
}

// collect adds err, a mismatch or mismatches, to errs.
func collect(errs avroMismatches, err error) avroMismatches {
	if more, ok := err.(avroMismatches); ok {
		return append(errs, more...)
	}
	return append(errs, err)
}

// result is a node, or the mismatches collected in its place.
func result(n *avroNode, errs avroMismatches) (*avroNode, error) {
	switch len(errs) {
	case 0:
		return n, nil
	case 1:
		return nil, errs[0]
	}
	return nil, errs
}

// compileAvro plans the reading of writer's data as reader's; defs are the
// reader's field defaults (avrobin.FieldDefaults), which fill the fields
// the writer lacks.
func compileAvro(writer, reader avro.Schema, defs avrobin.Defaults) (*avroPlan, error) {
	c := &compiler{memo: map[[2]avro.Schema]*avroNode{}, building: map[[2]avro.Schema]bool{}, defs: defs}
	root, err := c.node(writer, reader, "")
	if err != nil {
		return nil, err
	}
	if c.recursive && c.widened {
		// The schemas bound a datum's nesting only through its data.
		c.unreadable = append(c.unreadable, fmt.Sprintf(
			"values nest deeper in the new schema, which wraps a recursive type in a union: a value nested past %d levels has no reading", avrobin.MaxDepth))
	}
	p := &avroPlan{root: root, same: true, changes: c.changes, unreadable: c.unreadable}
	seen := map[*avroNode]bool{}
	var walk func(n *avroNode)
	walk = func(n *avroNode) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		p.same = p.same && n.same
		p.hasMap = p.hasMap || n.op == opMap
		p.hasString = p.hasString || n.text != textNone
		walk(n.elem)
		for _, b := range n.branches {
			walk(b.node)
		}
		for _, f := range n.fields {
			walk(f.node)
		}
	}
	walk(root)
	return p, nil
}

type compiler struct {
	// memo holds the records compiled or being compiled, by (writer,
	// reader): recursive schemas refer back to them.
	memo map[[2]avro.Schema]*avroNode
	// building holds the records being compiled: meeting one again is
	// recursion.
	building map[[2]avro.Schema]bool
	// recursive: the schemas recurse; widened: the reader wraps a writer
	// value in a union, one level deeper.
	recursive, widened bool
	// defs are the reader's field defaults.
	defs avrobin.Defaults
	// added, changes and unreadable are logs that a failed union branch
	// trial rolls back.
	added      [][2]avro.Schema
	changes    []string
	unreadable []string
}

func (c *compiler) change(path, format string, args ...any) {
	c.changes = append(c.changes, prefixed(path, fmt.Sprintf(format, args...)))
}

func prefixed(path, msg string) string {
	if path == "" {
		return msg
	}
	return path + ": " + msg
}

func (c *compiler) node(w, r avro.Schema, path string) (*avroNode, error) {
	w, r = avrobin.Deref(w), avrobin.Deref(r)
	if wu, ok := w.(*avro.UnionSchema); ok && len(wu.Types()) == 0 {
		// The empty union has no values: any reader reads all of them.
		return &avroNode{op: opUnion, same: true, minSize: 1}, nil
	}
	if ru, ok := r.(*avro.UnionSchema); ok {
		return c.intoUnion(w, ru, path)
	}
	if wu, ok := w.(*avro.UnionSchema); ok {
		return c.fromUnion(wu, r, path)
	}
	if logical(w) != logical(r) {
		return nil, mismatch(path, "logical type changed (%s → %s)", logicalName(w), logicalName(r))
	}
	if w.Type() != r.Type() {
		op, ok := promotion(w.Type(), r.Type())
		if !ok {
			return nil, mismatch(path, "type change %s→%s cannot be promoted", w.Type(), r.Type())
		}
		switch {
		case op == opBytes && w.Type() == avro.Bytes:
			c.unreadable = append(c.unreadable, prefixed(path, "bytes promoted to string: values that are not UTF-8 have no reading"))
			return &avroNode{op: opBytes, minSize: 1, text: textFromBytes}, nil
		case op == opBytes:
			c.change(path, "%s promoted to %s", w.Type(), r.Type())
			return &avroNode{op: opBytes, minSize: 1, text: textString}, nil
		}
		c.change(path, "%s promoted to %s", w.Type(), r.Type())
		return &avroNode{op: op, minSize: nodeFor(w.Type()).minSize}, nil
	}
	switch w := w.(type) {
	case *avro.RecordSchema:
		return c.record(w, r.(*avro.RecordSchema), path)
	case *avro.EnumSchema:
		return c.enum(w, r.(*avro.EnumSchema), path)
	case *avro.FixedSchema:
		r := r.(*avro.FixedSchema)
		if !namesMatch(w, r) {
			return nil, mismatch(path, "fixed %s renamed to %s without an alias", w.FullName(), r.FullName())
		}
		if w.Size() != r.Size() {
			return nil, mismatch(path, "fixed %s size changed (%d → %d)", r.FullName(), w.Size(), r.Size())
		}
		same := w.FullName() == r.FullName()
		if !same {
			c.change(path, "fixed %s read as %s", w.FullName(), r.FullName())
		}
		return &avroNode{op: opFixed, same: same, size: w.Size(), minSize: w.Size(), decimal: decimalOf(r)}, nil
	case *avro.ArraySchema:
		ri := r.(*avro.ArraySchema).Items()
		items, err := c.node(w.Items(), ri, path+"[]")
		if err != nil {
			return nil, err
		}
		n := &avroNode{op: opArray, same: true, elem: items, minSize: 1}
		if items.minSize > 0 && avrobin.MinSize(ri) == 0 {
			n.zeroOut = true
			c.unreadable = append(c.unreadable, prefixed(path+"[]", fmt.Sprintf(
				"items take no bytes in the new schema: a value with more than %d of them has no reading", avrobin.MaxZeroWidthItems)))
		}
		return n, nil
	case *avro.MapSchema:
		values, err := c.node(w.Values(), r.(*avro.MapSchema).Values(), path+"{}")
		if err != nil {
			return nil, err
		}
		return &avroNode{op: opMap, same: true, elem: values, minSize: 1}, nil
	}
	if d := decimalOf(r); d != nil {
		return &avroNode{op: opBytes, same: true, minSize: 1, decimal: d}, nil
	}
	if n := nodeFor(w.Type()); n != nil {
		return n, nil
	}
	return nil, mismatch(path, "unsupported Avro type %s", w.Type())
}

func nodeFor(t avro.Type) *avroNode {
	switch t {
	case avro.Null:
		return nodeNull
	case avro.Boolean:
		return nodeBool
	case avro.Int:
		return nodeInt
	case avro.Long:
		return nodeLong
	case avro.Float:
		return nodeFloat
	case avro.Double:
		return nodeDouble
	case avro.String:
		return nodeString
	case avro.Bytes:
		return nodeBytes
	}
	return nil
}

// promotion is the specification's list of writer types a reader type can
// read.
func promotion(w, r avro.Type) (avroOp, bool) {
	switch {
	case w == avro.Int && r == avro.Long:
		return opIntToLong, true
	case w == avro.Int && r == avro.Float:
		return opIntToFloat, true
	case w == avro.Int && r == avro.Double:
		return opIntToDouble, true
	case w == avro.Long && r == avro.Float:
		return opLongToFloat, true
	case w == avro.Long && r == avro.Double:
		return opLongToDouble, true
	case w == avro.Float && r == avro.Double:
		return opFloatToDouble, true
	case w == avro.String && r == avro.Bytes, w == avro.Bytes && r == avro.String:
		return opBytes, true
	}
	return 0, false
}

// logical names a schema's logical type, with a decimal's precision and
// scale, or is empty. Any change is incompatible: the specification lets a
// reader ignore logical types, but reading timestamp-micros as
// timestamp-millis, or a decimal at another scale, silently changes every
// value.
func logical(s avro.Schema) string {
	lt, ok := s.(avro.LogicalTypeSchema)
	if !ok || lt.Logical() == nil {
		return ""
	}
	if d, ok := lt.Logical().(*avro.DecimalLogicalSchema); ok {
		return fmt.Sprintf("decimal(%d,%d)", d.Precision(), d.Scale())
	}
	return string(lt.Logical().Type())
}

// logicalName is the logical type, or the type when there is none.
func logicalName(s avro.Schema) string {
	if l := logical(s); l != "" {
		return l
	}
	return string(s.Type())
}

// namesMatch follows the specification: the unqualified names are equal, or
// one of the reader's aliases is the writer's full name.
func namesMatch(w, r avro.NamedSchema) bool {
	return w.Name() == r.Name() || slices.Contains(r.Aliases(), w.FullName())
}

func describe(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return logicalName(s)
}

func (c *compiler) intoUnion(w avro.Schema, ru *avro.UnionSchema, path string) (*avroNode, error) {
	wu, ok := w.(*avro.UnionSchema)
	if !ok {
		i, n, err := c.branch(w, ru, path)
		if err != nil {
			return nil, err
		}
		c.change(path, "%s widened to a union", describe(w))
		c.widened = true
		return &avroNode{op: opToUnion, index: i, elem: n, minSize: n.minSize}, nil
	}
	u := &avroNode{op: opUnion, same: len(wu.Types()) == len(ru.Types()), minSize: 1}
	readable := 0
	var errs avroMismatches
	for wi, wb := range wu.Types() {
		ri, n, err := c.branch(wb, ru, path)
		if m, ok := err.(*avroMismatch); ok && m.noBranch {
			u.same = false
			u.branches = append(u.branches, unionBranch{index: -1, node: c.unreadableBranch(m)})
			continue
		}
		if err != nil {
			errs = collect(errs, err)
			continue
		}
		if ri != wi {
			u.same = false
		}
		readable++
		u.branches = append(u.branches, unionBranch{index: ri, node: n})
	}
	if len(errs) > 0 {
		return result(nil, errs)
	}
	if readable == 0 {
		return nil, mismatch(path, "union narrowed: no branch of the writer union matches the reader union")
	}
	if !u.same {
		c.change(path, "union branches changed")
	}
	return u, nil
}

// unreadableBranch stands for a writer union branch that nothing in the
// reader matches: the values that use it fail to migrate, with m (whose
// path the transcoder's error gives by itself).
func (c *compiler) unreadableBranch(m *avroMismatch) *avroNode {
	c.unreadable = append(c.unreadable, m.Error())
	return &avroNode{op: opUnreadable, msg: m.msg}
}

// branch picks the reader union branch for a writer type: the one of the
// same type and name if there is one (and then its resolution, good or bad),
// otherwise the first that matches and resolves. When branches match but
// none resolves, the first one's error says why.
func (c *compiler) branch(w avro.Schema, ru *avro.UnionSchema, path string) (int, *avroNode, error) {
	w = avrobin.Deref(w)
	for i, rb := range ru.Types() {
		if sameType(w, avrobin.Deref(rb)) {
			n, err := c.node(w, rb, path)
			return i, n, err
		}
	}
	var first error
	for i, rb := range ru.Types() {
		if !matches(w, avrobin.Deref(rb)) {
			continue
		}
		added, changes, unreadable := len(c.added), len(c.changes), len(c.unreadable)
		n, err := c.node(w, rb, path)
		if err == nil {
			return i, n, nil
		}
		first = cmp.Or(first, err)
		for _, k := range c.added[added:] {
			delete(c.memo, k)
		}
		c.added, c.changes, c.unreadable = c.added[:added], c.changes[:changes], c.unreadable[:unreadable]
	}
	if first != nil {
		return 0, nil, first
	}
	return 0, nil, &avroMismatch{path: path, msg: fmt.Sprintf("union narrowed: %s matches no branch of the reader union", describe(w)), noBranch: true}
}

// matches is the specification's first test of resolution: the types are
// the same or promote, named types have matching names, and fixed types the
// same size too. Schemas that match may still fail to resolve (a field
// added without a default); those that do not match cannot read any value.
func matches(w, r avro.Schema) bool {
	if w.Type() != r.Type() {
		_, ok := promotion(w.Type(), r.Type())
		return ok
	}
	if wf, ok := w.(*avro.FixedSchema); ok && wf.Size() != r.(*avro.FixedSchema).Size() {
		return false
	}
	wn, ok := w.(avro.NamedSchema)
	return !ok || namesMatch(wn, r.(avro.NamedSchema))
}

func sameType(w, r avro.Schema) bool {
	if w.Type() != r.Type() || logical(w) != logical(r) {
		return false
	}
	if wf, ok := w.(*avro.FixedSchema); ok && wf.Size() != r.(*avro.FixedSchema).Size() {
		return false
	}
	wn, ok := w.(avro.NamedSchema)
	return !ok || wn.FullName() == r.(avro.NamedSchema).FullName()
}

func (c *compiler) fromUnion(wu *avro.UnionSchema, r avro.Schema, path string) (*avroNode, error) {
	u := &avroNode{op: opUnion, minSize: 1}
	var first error
	var errs avroMismatches
	for _, wb := range wu.Types() {
		if wb := avrobin.Deref(wb); !matches(wb, r) {
			narrowed := &avroMismatch{path: path, msg: fmt.Sprintf("union narrowed to %s: writer branch %s cannot be read", describe(r), describe(wb))}
			first = cmp.Or(first, error(narrowed))
			u.branches = append(u.branches, unionBranch{index: -1, node: c.unreadableBranch(narrowed)})
			continue
		}
		n, err := c.node(wb, r, path)
		if err != nil {
			errs = collect(errs, err)
			continue
		}
		u.branches = append(u.branches, unionBranch{index: -1, node: n})
	}
	if len(errs) > 0 {
		return result(nil, errs)
	}
	if !slices.ContainsFunc(u.branches, func(b unionBranch) bool { return b.node.op != opUnreadable }) {
		return nil, first
	}
	c.change(path, "union read as %s", describe(r))
	return u, nil
}

func (c *compiler) record(w, r *avro.RecordSchema, path string) (*avroNode, error) {
	if !namesMatch(w, r) {
		return nil, mismatch(path, "record %s renamed to %s without an alias", w.FullName(), r.FullName())
	}
	key := [2]avro.Schema{w, r}
	if n, ok := c.memo[key]; ok {
		c.recursive = c.recursive || c.building[key]
		return n, nil
	}
	n := &avroNode{op: opRecord, name: r.Name(), inOrder: true}
	c.memo[key] = n
	c.added = append(c.added, key)
	c.building[key] = true
	defer delete(c.building, key)

	base := path
	if base == "" {
		base = r.Name()
	}
	if w.FullName() != r.FullName() {
		c.change(path, "record %s read as %s", w.FullName(), r.FullName())
	}
	wf, rf := w.Fields(), r.Fields()
	source := make([]int, len(wf)) // the reader field of each writer field
	for i := range source {
		source[i] = -1
	}
	n.readers = make([]readerField, len(rf))
	var errs avroMismatches
	for i, f := range rf {
		j := writerField(wf, f)
		fpath := base + "." + f.Name()
		if j < 0 {
			if !f.HasDefault() {
				errs = collect(errs, mismatch("", "field %s added without a default", fpath))
				continue
			}
			v, ok := c.defs[r.FullName()][f.Name()]
			if !ok {
				errs = collect(errs, mismatch(fpath, "default is not in the schema's JSON"))
				continue
			}
			def, err := appendDefault(nil, f.Type(), v, c.defs)
			if err != nil {
				errs = collect(errs, mismatch(fpath, "default does not fit the field's type: %v", err))
				continue
			}
			n.readers[i].def = def
			c.change("", "field %s added with a default", fpath)
			continue
		}
		if source[j] >= 0 {
			errs = collect(errs, mismatch("", "fields %s and %s both read writer field %s", rf[source[j]].Name(), f.Name(), wf[j].Name()))
			continue
		}
		source[j] = i
		n.readers[i].fromWriter = true
		if wf[j].Name() != f.Name() {
			c.change("", "field %s.%s renamed to %s", base, wf[j].Name(), f.Name())
		}
	}
	n.same = w.FullName() == r.FullName() && len(wf) == len(rf)
	last := -1
	for j, f := range wf {
		out := source[j]
		var fn *avroNode
		var err error
		if out < 0 {
			c.change("", "field %s.%s removed", base, f.Name())
			fn, err = c.node(f.Type(), f.Type(), base+"."+f.Name())
		} else {
			fn, err = c.node(f.Type(), rf[out].Type(), base+"."+rf[out].Name())
			if out < last {
				n.inOrder = false
			}
			last = out
		}
		if err != nil {
			errs = collect(errs, err)
			continue
		}
		n.same = n.same && out == j && f.Name() == rf[j].Name()
		n.fields = append(n.fields, fieldStep{name: f.Name(), node: fn, out: out})
		n.minSize += fn.minSize
	}
	if !n.inOrder {
		c.change("", "fields of %s reordered", base)
	}
	return result(n, errs)
}

// symbols names enum symbols: "symbol A", "symbols A, B".
func symbols(names []string) string {
	if len(names) == 1 {
		return "symbol " + names[0]
	}
	return "symbols " + strings.Join(names, ", ")
}

// writerField finds the writer field a reader field reads: the one of the
// same name, else one named by the reader field's aliases.
func writerField(wf []*avro.Field, f *avro.Field) int {
	if i := slices.IndexFunc(wf, func(w *avro.Field) bool { return w.Name() == f.Name() }); i >= 0 {
		return i
	}
	return slices.IndexFunc(wf, func(w *avro.Field) bool { return slices.Contains(f.Aliases(), w.Name()) })
}

func (c *compiler) enum(w, r *avro.EnumSchema, path string) (*avroNode, error) {
	if !namesMatch(w, r) {
		return nil, mismatch(path, "enum %s renamed to %s without an alias", w.FullName(), r.FullName())
	}
	ws, rs := w.Symbols(), r.Symbols()
	n := &avroNode{op: opEnum, minSize: 1, symbols: make([]int32, len(ws))}
	var defaulted, missing []string
	reordered, last := false, -1
	for i, s := range ws {
		j := slices.Index(rs, s)
		switch {
		case j >= 0:
			reordered = reordered || j < last
			last = j
		case r.HasDefault():
			j = slices.Index(rs, r.Default())
			defaulted = append(defaulted, s)
		default:
			// As with a union branch the reader lacks, only the values
			// that use the symbol have no reading.
			missing = append(missing, s)
			n.writerSymbols = ws
		}
		n.symbols[i] = int32(j)
	}
	if len(missing) == len(ws) {
		return nil, mismatch(path, "enum %s: no symbol of the old enum is in the new one, which has no default", r.FullName())
	}
	var added []string
	for _, s := range rs {
		if !slices.Contains(ws, s) {
			added = append(added, s)
		}
	}
	n.same = w.FullName() == r.FullName() && slices.Equal(ws, rs)
	if w.FullName() != r.FullName() {
		c.change(path, "enum %s read as %s", w.FullName(), r.FullName())
	}
	if len(added) > 0 {
		c.change(path, "enum %s %s added", r.FullName(), symbols(added))
	}
	if len(defaulted) > 0 {
		c.change(path, "enum %s %s removed, read as the default %s", r.FullName(), symbols(defaulted), r.Default())
	}
	if len(missing) > 0 {
		them := "them"
		if len(missing) == 1 {
			them = "it"
		}
		c.unreadable = append(c.unreadable, prefixed(path, fmt.Sprintf("enum %s %s removed: values that use %s have no reading", r.FullName(), symbols(missing), them)))
	}
	if reordered {
		c.change(path, "enum %s symbols reordered", r.FullName())
	}
	return n, nil
}
