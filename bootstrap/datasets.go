package bootstrap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/stateproc/stateproc/export"
	"github.com/stateproc/stateproc/internal/workers"
	"github.com/stateproc/stateproc/rewrite"
	"github.com/stateproc/stateproc/storage"
)

// Dataset file formats, by the extension export gives their files.
const (
	extParquet = ".parquet"
	extArrow   = ".arrow"
	extJSONL   = ".jsonl"
)

// dataFile is one file of a dataset.
type dataFile struct {
	t    *target
	name string
	// source is the file's name for messages: the directory's location
	// and the name.
	source string
	size   int64
}

// Load adds the datasets under dir to the savepoint: the layout export
// writes, one directory per state named by the operator's uid and the
// state's name (DIR/<uid>/<state>/part-*.parquet, escaped as export
// escapes them), each file Parquet, Arrow IPC or JSON lines by its
// extension. Files and directories whose names start with '.' or '_' are
// left out, as query engines leave them out. A directory that names no
// state of the job is refused before anything is read; a state without a
// directory stays empty.
//
// Files are read on Options.Workers goroutines. Rows that do not fit
// their state are collected, up to Options.MaxBadRows, and returned as a
// *BadRows error once every file is read (or the limit is reached).
func (b *Builder) Load(ctx context.Context, dir storage.Dir) error {
	files, err := b.datasetFiles(ctx, dir)
	if err != nil {
		return err
	}
	// Sources are numbered in file order, whatever order the workers
	// read them in, so that equal entries sort the same every time.
	srcs := make([]uint64, len(files))
	for i := range files {
		if srcs[i], err = b.source(files[i].source); err != nil {
			return err
		}
	}
	// The largest files first, so that one large file does not start last.
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(files[y].size, files[x].size) })
	var total, done int64
	for _, f := range files {
		total += f.size
	}
	var progress sync.Mutex
	err = workers.Run(ctx, len(order), b.opts.Workers, func(ctx context.Context, _, i int) error {
		f := &files[order[i]]
		if err := b.loadFile(ctx, dir, f, srcs[order[i]]); err != nil {
			return err
		}
		f.t.files.Add(1)
		if b.opts.Progress != nil {
			progress.Lock()
			done += f.size
			b.opts.Progress(done, total)
			progress.Unlock()
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	if err != nil {
		return err
	}
	return b.bad.err()
}

// errEnough stops the workers once enough bad rows are known.
var errEnough = errors.New("bootstrap: enough bad rows")

// datasetFiles lists the files of dir by dataset, each matched to its
// state.
func (b *Builder) datasetFiles(ctx context.Context, dir storage.Dir) ([]dataFile, error) {
	names, err := dir.List(ctx)
	if err != nil {
		return nil, err
	}
	byDir := map[string]*target{}
	for _, t := range b.targets {
		byDir[export.DatasetDir(t.uid, t.name)] = t
	}
	var files []dataFile
	var unknown []string
	for _, name := range names {
		parts := strings.Split(name, "/")
		if slices.ContainsFunc(parts, hidden) {
			continue
		}
		if len(parts) != 3 {
			return nil, rewrite.Refusef("%s lies outside the layout of datasets, <operator uid>/<state>/<file>", path.Join(dir.Location(), name))
		}
		ds := parts[0] + "/" + parts[1]
		t, ok := byDir[ds]
		if !ok {
			if !slices.Contains(unknown, ds) {
				unknown = append(unknown, ds)
			}
			continue
		}
		switch path.Ext(name) {
		case extParquet, extArrow, extJSONL:
		default:
			return nil, fileError(path.Join(dir.Location(), name), fmt.Errorf("not a dataset file: want %s, %s or %s", extParquet, extArrow, extJSONL))
		}
		files = append(files, dataFile{t: t, name: name, source: path.Join(dir.Location(), name)})
	}
	if len(unknown) > 0 {
		return nil, rewrite.Refusef("%d datasets under %s match no state of the job: %s", len(unknown), dir.Location(), strings.Join(unknown, ", "))
	}
	slices.SortFunc(files, func(x, y dataFile) int { return cmp.Compare(x.name, y.name) })
	for i := range files {
		f, err := dir.Open(ctx, files[i].name)
		if err != nil {
			return nil, err
		}
		files[i].size = f.Size()
		f.Close()
	}
	return files, nil
}

// hidden is a name query engines leave out: _SUCCESS, .crc files.
func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// loadFile reads one dataset file into its state.
func (b *Builder) loadFile(ctx context.Context, dir storage.Dir, df *dataFile, src uint64) error {
	if b.bad.full() {
		return errEnough
	}
	cols, err := df.t.columns()
	if err != nil {
		return err
	}
	f, err := dir.Open(ctx, df.name)
	if err != nil {
		return err
	}
	defer f.Close()
	s := &sink{b: b, t: df.t, source: src}
	if df.t.keyed != nil || df.t.timers != nil {
		if s.sp, err = b.spill.take(ctx); err != nil {
			return err
		}
	}
	defer s.close()
	rd := io.NewSectionReader(f, 0, f.Size())
	fl := &fileLoad{b: b, s: s, source: df.source, cols: cols}
	switch path.Ext(df.name) {
	case extParquet:
		err = fl.parquet(ctx, rd)
	case extArrow:
		err = fl.arrowIPC(ctx, rd)
	default:
		err = fl.jsonl(ctx, rd)
	}
	if err != nil {
		return err
	}
	s.close()
	if b.bad.full() {
		return errEnough
	}
	return nil
}

// fileLoad is the reading of one file.
type fileLoad struct {
	b      *Builder
	s      *sink
	source string
	cols   []column
	r      row
	// failed says a row of the file was bad: the rest is checked, not
	// added.
	failed bool
}

// bad records a bad row; it returns errEnough once enough are known.
func (fl *fileLoad) bad(n int64, column string, err error) error {
	fl.failed = true
	if !fl.b.bad.add(&RowError{Source: fl.source, Row: n, Column: column, Err: err}) {
		return errEnough
	}
	return nil
}

// badColumn records a column that cannot hold its state's values: the
// whole file is bad.
func (fl *fileLoad) badColumn(column string, err error) error {
	fl.failed = true
	fl.b.bad.add(&RowError{Source: fl.source, Column: column, Err: err})
	return nil
}

// add adds the row read into fl.r, unless the file had a bad row.
func (fl *fileLoad) add(n int64) error {
	if fl.failed || fl.b.bad.any() {
		return nil
	}
	if err := fl.r.emit(fl.s, n); err != nil {
		return err
	}
	return nil
}
