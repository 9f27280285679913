package export

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/keygroup"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/storage"
)

// Defaults of Options.
const (
	// DefaultMaxRowsPerFile splits large states into files that several
	// cores write at once, and that readers can split between them.
	DefaultMaxRowsPerFile = 1 << 20
	// DefaultRowGroupRows is about what DuckDB and Spark write.
	DefaultRowGroupRows = 128 << 10
	// rowGroupBytes cuts a row group early when its input is large, so
	// that memory stays bounded when values are: a row group is what an
	// export holds in memory per worker.
	rowGroupBytes = 64 << 20
)

// Options says what to export and how.
type Options struct {
	// Format is Parquet unless set.
	Format Format
	// Compression is Zstd unless set; JSONL is never compressed.
	Compression Compression
	// Operator, if set, exports that operator's states only; State, if
	// set, only the states of that name.
	Operator, State string
	// KeyGroups, if set, exports only those key groups of keyed states and
	// timers, and leaves out operator and broadcast state unless
	// WithNonKeyed.
	KeyGroups *keygroup.Range
	// WithNonKeyed exports operator and broadcast state with KeyGroups set:
	// the one shard of a sharded export that carries them.
	WithNonKeyed bool
	// Now, if set, adds the expired column to TTL states: whether each
	// entry is expired at that time (epoch milliseconds) by ttl.Expired.
	Now *int64
	// MaxRowsPerFile is DefaultMaxRowsPerFile if 0; negative means no
	// limit.
	MaxRowsPerFile int64
	// RowGroupRows is DefaultRowGroupRows if 0.
	RowGroupRows int
	// Workers is the number of files written at once: GOMAXPROCS if 0.
	Workers int
	// Progress, if set, is called after each row group with the rows
	// written so far and the rows to write. Workers call it at once.
	Progress func(written, total int64)
	// Part, for a part of an export run in shards, says what it is a part
	// of (package shard's PartOf); the marker of a part in a bucket records
	// it, and the caller writes it beside a local part.
	Part json.RawMessage
	// builders writes flat datasets through Arrow builders too, as every
	// other dataset is written: the tests compare the bytes of both ways.
	builders bool
}

// Summary describes what an export wrote.
type Summary struct {
	Datasets []DatasetSummary `json:"datasets"`
	Rows     int64            `json:"rows"`
	Files    int              `json:"files"`
	Bytes    int64            `json:"bytes"`
}

// DatasetSummary describes one dataset of an export.
type DatasetSummary struct {
	Operator string `json:"operator"`
	State    string `json:"state"`
	// Kind is the keyed state's kind (value, list, map, reducing,
	// aggregating), or timers, operator or broadcast.
	Kind string `json:"kind"`
	// Dir is the dataset's directory, relative to the export's.
	Dir   string `json:"dir"`
	Rows  int64  `json:"rows"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

// Run writes the datasets that o selects from src into out, one directory
// per dataset. It does not publish out: the caller publishes it when Run
// succeeds and aborts it when Run fails, so that no partial export is ever
// where a reader would take it for a whole one.
//
// Every type is mapped before anything is written: a state with a type that
// has no Arrow mapping fails the export with an error wrapping
// ErrUnmappable. A value that does not decode fails it with an error
// wrapping serializers.ErrDecode.
func Run(ctx context.Context, src savepoint.Source, out storage.Staging, o Options) (*Summary, error) {
	o.defaults()
	if !o.Format.valid() {
		return nil, fmt.Errorf("export: unknown format %q", o.Format)
	}
	if o.Compression != Zstd && o.Compression != Uncompressed {
		return nil, fmt.Errorf("export: unknown compression %q", o.Compression)
	}
	datasets, err := selectDatasets(src, &o)
	if err != nil {
		return nil, err
	}
	var runs []*run
	for _, ds := range datasets {
		if err := ds.count(ctx, src, o.KeyGroups); err != nil {
			return nil, err
		}
		runs = append(runs, ds.runs(o.MaxRowsPerFile)...)
	}
	x := &exporter{src: src, out: out, opts: o,
		wo: writerOptions{format: o.Format, compression: o.Compression, rowGroupRows: o.RowGroupRows, builders: o.builders}}
	if t, ok := out.(storage.Target); ok && storage.InBucket(t) {
		x.named = t
	}
	for _, ds := range datasets {
		x.total += ds.rows
	}
	if err := x.run(ctx, runs, o.Workers); err != nil {
		return nil, err
	}
	s := &Summary{}
	for _, ds := range datasets {
		d := DatasetSummary{Operator: ds.op.UID, State: ds.name, Kind: ds.kind, Dir: ds.dir, Rows: ds.rows, Files: int(ds.files), Bytes: ds.bytes.Load()}
		s.Datasets = append(s.Datasets, d)
		s.Rows += d.Rows
		s.Files += d.Files
		s.Bytes += d.Bytes
	}
	if x.named != nil {
		if err := x.writeMarker(ctx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (o *Options) defaults() {
	if o.Format == "" {
		o.Format = Parquet
	}
	if o.Compression == "" || o.Format == JSONL {
		o.Compression = Zstd
	}
	switch {
	case o.MaxRowsPerFile == 0:
		o.MaxRowsPerFile = DefaultMaxRowsPerFile
	case o.MaxRowsPerFile < 0:
		o.MaxRowsPerFile = 0
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.Workers <= 0 {
		o.Workers = workers.Default()
	}
}

type exporter struct {
	src     savepoint.Source
	out     storage.Staging
	opts    Options
	wo      writerOptions
	total   int64
	written atomic.Int64
	// named is out when it lies in a bucket: its parts are named after
	// their bytes there, and files lists them for the marker.
	named storage.Target
	mu    sync.Mutex
	files []MarkerFile
	// putting closes the parts written into a bucket, whose requests the
	// workers do not wait for: each goes on to its next part meanwhile.
	// The parts are created under putCtx, which outlives the workers' and
	// is theirs too; stop cancels it with the failure that stops the
	// export: a close that fails stops the workers, and a worker that
	// fails stops the puts, its own part's included, and the other
	// workers.
	putting errgroup.Group
	putCtx  context.Context
	stop    context.CancelCauseFunc
}

// putsInFlight bounds the parts of an export into a bucket that are being
// put while the workers write on. Each holds what it buffered (a part
// small enough is put in one request at its close) until the store
// answers; a worker that would start one more waits instead.
const putsInFlight = 4

// wrote counts rows written, for Options.Progress.
func (x *exporter) wrote(rows int) {
	n := x.written.Add(int64(rows))
	if x.opts.Progress != nil {
		x.opts.Progress(n, x.total)
	}
}

// run writes the runs on the workers, longest first, each worker taking
// the next run when it is done with one, so that they finish close
// together. A run's files are written in order by one worker, which reads
// on from where the file before stopped, so that no file reads the
// entries of the files before it again (a key group of many entries is
// many files). Which worker writes a part does not change the part's
// bytes.
//
// Into a bucket, a part's close (its upload) runs while its worker writes
// the next one; run returns once every part is closed, so that nothing is
// still being put when the export is published or aborted.
func (x *exporter) run(ctx context.Context, runs []*run, n int) error {
	slices.SortStableFunc(runs, func(a, b *run) int { return cmp.Compare(b.allRows, a.allRows) })
	x.putting.SetLimit(putsInFlight)
	x.putCtx, x.stop = context.WithCancelCause(ctx)
	defer x.stop(nil)
	err := x.runParts(x.putCtx, runs, n)
	if err != nil {
		x.stop(err)
	}
	if perr := x.putting.Wait(); err == nil {
		err = perr
	}
	// What the others return once stopped is the cancellation: the first
	// failure, which stopped them, says what went wrong.
	if cause := context.Cause(x.putCtx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return err
}

func (x *exporter) runParts(ctx context.Context, runs []*run, n int) error {
	return workers.Run(ctx, len(runs), n, func(ctx context.Context, _, i int) error {
		var cur cursor
		defer func() {
			cur.close()
			if cur.walk != nil {
				cur.walk.Close()
			}
		}()
		r := runs[i]
		if r.ds.index != nil {
			// In a bucket the run's segments are read ahead of it, each
			// of the n runs at once within its share of one walk's
			// memory and requests.
			first, end := r.segments()
			cur.walk, cur.base, cur.end = savepoint.WalkSegmentsShared(ctx, x.src, r.ds.index[first:end], n), first, end
		}
		for k := range r.parts {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := x.writePart(ctx, r.nth(k), k > 0, &cur); err != nil {
				x.stop(err)
				return err
			}
		}
		return nil
	})
}

// writePart writes one file and adds its size to its dataset's. With
// continues, it reads on from cur, where the part before it in its run
// stopped.
func (x *exporter) writePart(ctx context.Context, p *part, continues bool, cur *cursor) error {
	name := p.name(x.opts.Format)
	var f io.WriteCloser
	var named storage.NamedWriter
	var err error
	if x.named != nil {
		ext := path.Ext(name)
		named, err = x.named.CreateNamed(x.putCtx, strings.TrimSuffix(name, ext), ext)
		f = named
	} else {
		f, err = x.out.Create(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("export: %s: %w", name, err)
	}
	cw := &countingWriter{w: f}
	err = x.fillPart(ctx, p, name, cw, continues, cur)
	p.ds.bytes.Add(cw.n)
	if err != nil && named != nil {
		// The export fails: nothing more is put, this part included,
		// whose close then only lets go of what it holds.
		x.stop(err)
	}
	if err == nil && named != nil {
		x.putting.Go(func() error {
			if err := named.Close(); err != nil {
				err = fmt.Errorf("export: %s: %w", name, err)
				x.stop(err)
				return err
			}
			x.mu.Lock()
			x.files = append(x.files, MarkerFile{Name: named.Name(), Bytes: cw.n})
			x.mu.Unlock()
			return nil
		})
		return nil
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("export: %s: %w", name, cerr)
	}
	return err
}

func (x *exporter) fillPart(ctx context.Context, p *part, name string, w io.Writer, continues bool, cur *cursor) error {
	ds := p.ds
	schema := arrow.NewSchema(ds.layout.arrowFields(), &ds.metadata)
	b := &batcher{name: name, maxRows: min(x.opts.RowGroupRows, int(max(p.rows, 1))), wrote: x.wrote}
	var fw interface{ close() error }
	if x.wo.flat(ds) {
		pw := x.wo.newFlatWriter(w, schema, ds.dictKey())
		rows := ds.layout.newFlatRows(ds.dictKey())
		b.sink = rows
		b.group = func(bool) error {
			err := pw.writeGroup(rows)
			rows.reset()
			return err
		}
		fw = pw
	} else {
		aw, err := x.wo.newFileWriter(w, schema)
		if err != nil {
			return fmt.Errorf("export: %s: %w", name, err)
		}
		rb := array.NewRecordBuilder(memAlloc, schema)
		defer rb.Release()
		g := &arrowGroups{rb: rb, fw: aw, reserve: reserveRows(schema, b.maxRows)}
		rb.Reserve(g.reserve)
		b.rows = ds.layout.bind(rb)
		b.sink = b.rows
		b.group = g.write
		fw = aw
	}
	var err error
	switch {
	case ds.opState != nil:
		err = x.operatorRows(p, b)
	case ds.broadcast != nil:
		err = x.broadcastRows(p, b)
	default:
		err = x.keyedRows(ctx, p, b, continues, cur)
	}
	if err == nil {
		err = b.flush(true)
	}
	if cerr := fw.close(); err == nil && cerr != nil {
		err = fmt.Errorf("export: %s: %w", name, cerr)
	}
	return err
}

// cursor is where the reading of a run of parts stands: the index entry
// being read, its iterator and the entries read from it, and the list
// element the last one was.
type cursor struct {
	seg             int
	it              savepoint.EntryIterator
	n               uint64
	index           int32
	prevKey, prevNs []byte
	// walk reads the run's index entries [base, end).
	walk      savepoint.Walk
	base, end int
}

func (c *cursor) close() {
	if c.it != nil {
		c.it.Close()
		c.it = nil
	}
}

// entries iterates index entry c.seg, seg, through the run's walk.
func (c *cursor) entries(ctx context.Context, src savepoint.Source, seg savepoint.Segment) savepoint.EntryIterator {
	if c.walk != nil && c.seg >= c.base && c.seg < c.end {
		return c.walk.Entries(ctx, c.seg-c.base)
	}
	return savepoint.SegmentEntries(ctx, src, seg)
}

// keyedRows appends the rows of a keyed state or timer part: entry skip of
// its first key group onwards or, with continues, from where cur stands.
func (x *exporter) keyedRows(ctx context.Context, p *part, b *batcher, continues bool, cur *cursor) error {
	ds := p.ds
	list := ds.state != nil && ds.state.Kind == savepoint.List
	left := p.rows
	var skip uint64
	if !continues {
		cur.close()
		cur.seg, cur.n, skip = p.first, 0, p.skip
	}
	for ; left > 0 && cur.seg < len(ds.index); cur.seg, cur.n = cur.seg+1, 0 {
		st := ds.index[cur.seg]
		if cur.it == nil {
			cur.it = cur.entries(ctx, x.src, st)
		}
		it := cur.it
		for left > 0 && it.Next() {
			e := it.Entry()
			if list {
				if cur.n > 0 && bytes.Equal(e.Key, cur.prevKey) && bytes.Equal(e.Namespace, cur.prevNs) {
					cur.index++
				} else {
					cur.index = 0
					cur.prevKey = append(cur.prevKey[:0], e.Key...)
					cur.prevNs = append(cur.prevNs[:0], e.Namespace...)
				}
			}
			cur.n++
			if skip > 0 {
				skip--
				continue
			}
			if err := b.sink.keyed(st.KeyGroup, e, cur.index); err != nil {
				return x.undecodable(ds, st.KeyGroup, cur.n-1, err)
			}
			left--
			if err := b.added(len(e.Key) + len(e.Namespace) + len(e.MapKey) + len(e.Value)); err != nil {
				return err
			}
		}
		if left == 0 && cur.n < st.Entries {
			// The next part of the run reads on from here.
			return nil
		}
		// A key group read to its end is checked against its index by the
		// iterator's last Next.
		more := cur.n == st.Entries && it.Next()
		err := it.Err()
		cur.close()
		switch {
		case err != nil:
			return err
		case more, cur.n < st.Entries:
			return fmt.Errorf("export: operator %q %s %q: key group %d: the data holds other than the %d entries the index says: %w",
				ds.op.UID, ds.what(), ds.name, st.KeyGroup, st.Entries, savepoint.ErrCorrupt)
		}
	}
	return nil
}

func (x *exporter) operatorRows(p *part, b *batcher) error {
	row := int64(0)
	for sub, elems := range p.ds.opState.Subtasks {
		for i, elem := range elems {
			if row >= p.start && row < p.start+p.rows {
				if err := b.rows.operatorElement(sub, i, elem); err != nil {
					return fmt.Errorf("export: operator %q %s %q: subtask %d element %d: %w", p.ds.op.UID, p.ds.what(), p.ds.name, sub, i, err)
				}
				if err := b.added(len(elem)); err != nil {
					return err
				}
			}
			row++
		}
	}
	return nil
}

func (x *exporter) broadcastRows(p *part, b *batcher) error {
	for i, e := range p.ds.broadcast.Entries[p.start : p.start+p.rows] {
		if err := b.rows.broadcastEntry(e); err != nil {
			return fmt.Errorf("export: operator %q %s %q: entry %d: %w", p.ds.op.UID, p.ds.what(), p.ds.name, int(p.start)+i, err)
		}
		if err := b.added(len(e.Key) + len(e.Value)); err != nil {
			return err
		}
	}
	return nil
}

// undecodable locates a value that does not decode: the entry's number
// within its key group's segment of the state.
func (x *exporter) undecodable(ds *dataset, kg int, n uint64, err error) error {
	return fmt.Errorf("export: operator %q %s %q: key group %d: entry %d: %w", ds.op.UID, ds.what(), ds.name, kg, n, err)
}

// batcher collects rows, and writes them as a row group when it holds
// enough rows or input bytes.
type batcher struct {
	name string
	// rows appends to Arrow builders; it is nil for a flat dataset, whose
	// sink is its flatRows.
	rows *rowWriter
	sink interface {
		keyed(kg int, e *savepoint.Entry, index int32) error
	}
	// group writes the rows appended so far as a row group and empties
	// the batch; last says no more will follow.
	group    func(last bool) error
	maxRows  int
	n, bytes int
	wrote    func(rows int)
}

// added counts a row just appended, of size input bytes.
func (b *batcher) added(size int) error {
	b.n++
	b.bytes += size
	if b.n >= b.maxRows || b.bytes >= rowGroupBytes {
		return b.flush(false)
	}
	return nil
}

// flush writes the rows appended so far as a row group; last says no more
// will follow.
func (b *batcher) flush(last bool) error {
	if b.n == 0 {
		return nil
	}
	n := b.n
	b.n, b.bytes = 0, 0
	if err := b.group(last); err != nil {
		return fmt.Errorf("export: %s: %w", b.name, err)
	}
	b.wrote(n)
	return nil
}

// arrowGroups writes the batches of a record builder.
type arrowGroups struct {
	rb *array.RecordBuilder
	fw fileWriter
	// reserve is the rows the builders make room for up front.
	reserve int
}

func (g *arrowGroups) write(last bool) error {
	// Builders start over empty: reserving a batch's rows, and as many
	// bytes of strings as the last batch had, spares them growing by
	// doubling, a copy each time.
	fields := g.rb.Fields()
	data := make([]int, len(fields))
	for i, f := range fields {
		if d, ok := f.(dataReserver); ok {
			data[i] = d.DataLen()
		}
	}
	rec := g.rb.NewRecordBatch()
	defer rec.Release()
	if !last {
		g.rb.Reserve(g.reserve)
		for i, f := range fields {
			if d, ok := f.(dataReserver); ok {
				d.ReserveData(data[i])
			}
		}
	}
	return g.fw.write(rec)
}

// reserveRows is how many rows a batch makes room for up front: maxRows,
// but no more than rowGroupBytes of fixed-width values hold. Both the row
// count (from the index) and the width (an Avro fixed's size) are input,
// and a row group is cut at rowGroupBytes of input anyway.
func reserveRows(schema *arrow.Schema, maxRows int) int {
	width := 0
	for _, f := range schema.Fields() {
		width += fixedWidth(f.Type)
	}
	if width == 0 {
		return maxRows
	}
	return max(1, min(maxRows, rowGroupBytes/width))
}

// fixedWidth is the bytes a builder of t reserves per row: lists, maps and
// strings reserve offsets only, their values grow with the data.
func fixedWidth(t arrow.DataType) int {
	switch t := t.(type) {
	case *arrow.StructType:
		w := 0
		for _, f := range t.Fields() {
			w += fixedWidth(f.Type)
		}
		return w
	case arrow.FixedWidthDataType:
		return max(t.BitWidth()/8, 1)
	}
	return 0
}

// dataReserver is a builder of strings or bytes.
type dataReserver interface {
	DataLen() int
	ReserveData(n int)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
