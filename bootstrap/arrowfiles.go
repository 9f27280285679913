package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/stateproc/stateproc/bootstrap/internal/encode"
	"github.com/stateproc/stateproc/export"
)

const (
	// batchRows is the rows of a Parquet batch: a few MiB of builders.
	batchRows = 16 << 10
	// readBuffer is the buffered read of a Parquet column chunk, so that
	// memory holds a page of each column rather than its whole chunk.
	readBuffer = 1 << 20
)

// memAlloc is Go's allocator, so that the collector counts and returns
// what the readers allocate.
var memAlloc = memory.DefaultAllocator

// guard runs a call into a file reader of the Arrow libraries, turning a
// panic on a damaged or hostile file into an error about that file.
func guard(source string, call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fileError(source, fmt.Errorf("unreadable: %v", p))
		}
	}()
	if err := call(); err != nil {
		return fileError(source, err)
	}
	return nil
}

func (fl *fileLoad) parquet(ctx context.Context, r *io.SectionReader) error {
	props := parquet.NewReaderProperties(memAlloc)
	props.BufferedStreamEnabled = true
	props.BufferSize = readBuffer
	var pf *file.Reader
	var fr *pqarrow.FileReader
	var schema *arrow.Schema
	err := guard(fl.source, func() error {
		var err error
		if pf, err = file.NewParquetReader(r, file.WithReadProps(props)); err != nil {
			return err
		}
		if fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memAlloc); err != nil {
			return err
		}
		schema, err = fr.Schema()
		return err
	})
	if pf != nil {
		defer pf.Close()
	}
	if err != nil {
		return err
	}
	kv := pf.MetaData().KeyValueMetadata()
	if err := fl.checkMetadata(func(key string) (string, bool) {
		if v := kv.FindValue(key); v != nil {
			return *v, true
		}
		return "", false
	}); err != nil {
		return err
	}
	cols, ok := fl.plan(schema)
	if !ok {
		return nil
	}
	var rr pqarrow.RecordReader
	if err := guard(fl.source, func() error {
		var err error
		rr, err = fr.GetRecordReader(ctx, nil, nil)
		return err
	}); err != nil {
		return err
	}
	defer rr.Release()
	var base int64
	for {
		var rec arrow.RecordBatch
		err := guard(fl.source, func() error {
			if rr.Next() {
				rec = rr.RecordBatch()
				return nil
			}
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		})
		if err != nil || rec == nil {
			return err
		}
		if err := fl.batch(ctx, rec, cols, base); err != nil {
			return err
		}
		base += rec.NumRows()
	}
}

func (fl *fileLoad) arrowIPC(ctx context.Context, r *io.SectionReader) error {
	var fr *ipc.FileReader
	if err := guard(fl.source, func() error {
		var err error
		fr, err = ipc.NewFileReader(r, ipc.WithAllocator(memAlloc))
		return err
	}); err != nil {
		return err
	}
	defer fr.Close()
	md := fr.Schema().Metadata()
	if err := fl.checkMetadata(func(key string) (string, bool) {
		if i := md.FindKey(key); i >= 0 {
			return md.Values()[i], true
		}
		return "", false
	}); err != nil {
		return err
	}
	cols, ok := fl.plan(fr.Schema())
	if !ok {
		return nil
	}
	var base int64
	for i := range fr.NumRecords() {
		var rec arrow.RecordBatch
		if err := guard(fl.source, func() error {
			var err error
			if rec, err = fr.RecordBatchAt(i); err != nil {
				return err
			}
			return validate(rec)
		}); err != nil {
			if rec != nil {
				rec.Release()
			}
			return err
		}
		// What validate leaves unchecked panics, if it is damaged, in the
		// Arrow library's accessors.
		var err error
		if gerr := guard(fl.source, func() error { err = fl.batch(ctx, rec, cols, base); return nil }); gerr != nil {
			err = gerr
		}
		base += rec.NumRows()
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// validate checks the buffers of an IPC file's batch, which are taken as
// they are: offsets that point outside them would make reading values
// panic. A column of a type with a null type within is left out: the
// Arrow library's validator wants a buffer that its IPC reader does not
// make for one.
func validate(rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		if hasNull(col.DataType()) {
			continue
		}
		if err := array.ValidateFull(col); err != nil {
			return fmt.Errorf("column %s: %w", rec.Schema().Field(i).Name, err)
		}
	}
	return nil
}

func hasNull(dt arrow.DataType) bool {
	if dt.ID() == arrow.NULL {
		return true
	}
	if n, ok := dt.(arrow.NestedType); ok {
		for _, f := range n.Fields() {
			if hasNull(f.Type) {
				return true
			}
		}
	}
	return false
}

// checkMetadata compares what a file says it holds, when it says so (as
// export's files do), with the state its directory names: a file moved
// into another state's directory, or a dataset of another kind, is
// refused.
func (fl *fileLoad) checkMetadata(value func(key string) (string, bool)) error {
	t := fl.s.t
	for _, c := range []struct{ key, want, what string }{
		{export.MetaOperator, t.uid, "operator"},
		{export.MetaState, t.name, "state"},
		{export.MetaKind, t.kind, "kind of state"},
	} {
		if got, ok := value(c.key); ok && got != c.want {
			return fileError(fl.source, fmt.Errorf("the file says it holds %s %q, its directory is that of %s %q of operator %q, a %s",
				c.what, got, t.what(), t.name, t.uid, t.kind))
		}
	}
	return nil
}

// boundColumn is a column of a file, bound to its encoder.
type boundColumn struct {
	c     *column
	field int
	enc   *encode.Bound
	arr   arrow.Array
}

// plan matches the fields of a file's schema to the state's columns. A
// field that is no column, a column that is missing, or a field whose
// type cannot hold its column's values make the file bad: plan reports it
// and returns false.
func (fl *fileLoad) plan(schema *arrow.Schema) ([]boundColumn, bool) {
	var out []boundColumn
	seen := map[string]bool{}
	for i, f := range schema.Fields() {
		k := slices.IndexFunc(fl.cols, func(c column) bool { return c.name == f.Name })
		if k < 0 {
			fl.badColumn(f.Name, fmt.Errorf("no such column in a dataset of %s; it has %s", fl.s.t.describe(), columnNames(fl.cols)))
			return nil, false
		}
		if seen[f.Name] {
			fl.badColumn(f.Name, errors.New("the column appears twice"))
			return nil, false
		}
		seen[f.Name] = true
		c := &fl.cols[k]
		if c.enc == nil {
			continue
		}
		enc, err := c.enc.Arrow(f.Type)
		if err != nil {
			name, e := columnError(c.name, err)
			fl.badColumn(name, e)
			return nil, false
		}
		out = append(out, boundColumn{c: c, field: i, enc: enc})
	}
	for _, c := range fl.cols {
		if !c.optional && !seen[c.name] {
			fl.badColumn(c.name, fmt.Errorf("the column is missing; a dataset of %s has %s", fl.s.t.describe(), columnNames(fl.cols)))
			return nil, false
		}
	}
	return out, true
}

// describe says what the target is, for messages.
func (t *target) describe() string {
	if t.keyed != nil {
		return fmt.Sprintf("%s state %s/%s", t.kind, t.uid, t.name)
	}
	return fmt.Sprintf("%s %s/%s", t.what(), t.uid, t.name)
}

func columnNames(cols []column) string {
	var names []string
	for _, c := range cols {
		n := c.name
		if c.optional {
			n += " (optional)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// columnError splits an encoder's error into the column and place it
// names, and what is wrong there.
func columnError(name string, err error) (string, error) {
	var e *encode.Error
	if errors.As(err, &e) {
		return name + e.Path, errors.New(e.Msg)
	}
	return name, err
}

// batch adds the rows of one record batch; base is the rows before it.
func (fl *fileLoad) batch(ctx context.Context, rec arrow.RecordBatch, cols []boundColumn, base int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for k := range cols {
		bc := &cols[k]
		bc.arr = rec.Column(bc.field)
		bc.enc.Bind(bc.arr)
	}
	now := fl.b.opts.Now
	for i := range int(rec.NumRows()) {
		n := base + int64(i) + 1
		fl.r.reset(now)
		ok := true
		for k := range cols {
			bc := &cols[k]
			if bc.c.optional && encode.IsNull(bc.arr, i) {
				continue
			}
			slot := fl.r.slot(bc.c)
			var err error
			if *slot, err = bc.enc.Append(*slot, i); err == nil {
				err = fl.r.take(bc.c)
			}
			if err != nil {
				name, e := columnError(bc.c.name, err)
				if err := fl.bad(n, name, e); err != nil {
					return err
				}
				ok = false
				break
			}
		}
		if ok {
			if err := fl.add(n); err != nil {
				return err
			}
		}
	}
	return nil
}
