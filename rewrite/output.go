package rewrite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/stateproc/stateproc/internal/workdir"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// Options say where and how a rewrite writes.
type Options struct {
	// Out is the target: a directory, or a bucket URL (see
	// storage.ParseLocation); Force replaces it if it exists.
	Out   string
	Force bool
	// DryRun writes nothing: the target is checked when Out is set, and the
	// rewrite reads what its report needs.
	DryRun bool
	// Writer configures the blocks the rewrite encodes; copied segments keep
	// theirs. See Codec for keeping the input's compression.
	Writer snapshotfmt.Options
	// Need is an estimate of the bytes the rewrite writes beside the target
	// (output and spill files); Create refuses to start when the file
	// system has less free. Zero skips the check.
	Need int64
	// Progress, when set, is called as the rewrite advances with the bytes
	// of input processed so far and the bytes it processes in all, once per
	// segment or block; see Meter. It is for a progress bar.
	Progress func(done, total int64)
	// Counters, when set, count what a target in a bucket is sent and
	// copies, for the same bar.
	Counters *storage.Counters
	// CheckCopies reads and checks every input file that the output keeps
	// whole. Without it, a target in a bucket of the input's store has the
	// store copy such a file without reading it (see WriteFiles).
	CheckCopies bool
	// Opened is a target in a bucket being opened ahead (OpenAhead), which
	// Create takes instead of opening Out again where it was opened for
	// Out and Force.
	Opened *Opening
}

// Opening is a target in a bucket opened while the input is: opening it
// looks for a savepoint there (a HEAD of its _metadata, and a listing with
// force), a round trip that need not wait for the input's. Nothing is
// written until Create takes it, after its checks.
type Opening struct {
	out   string
	force bool
	done  chan struct{}
	t     storage.Target
	err   error
	taken bool
	// cancel stops an opening that nobody takes.
	cancel context.CancelFunc
}

// OpenAhead starts opening out for writing if it is a bucket URL, and
// returns nil otherwise: a local target is staged beside itself once it
// is checked. Close the Opening in every case; it leaves a target Create
// took to the Output.
func OpenAhead(ctx context.Context, out string, force bool, counters *storage.Counters) *Opening {
	if loc, err := storage.ParseLocation(out); out == "" || err != nil || !loc.IsBucket() {
		return nil
	}
	// The target keeps the context it was opened with: it is cancelled
	// only if the target is not taken (Close).
	ctx, cancel := context.WithCancel(ctx)
	o := &Opening{out: out, force: force, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(o.done)
		o.t, o.err = storage.OpenTarget(ctx, out, storage.TargetOptions{Force: force, Options: storage.Options{Counters: counters}})
	}()
	return o
}

// Take waits for the target and hands it over, if it was opened for out
// and force (ok); the taker closes it.
func (o *Opening) Take(out string, force bool) (t storage.Target, ok bool, err error) {
	if o == nil || o.out != out || o.force != force {
		return nil, false, nil
	}
	<-o.done
	o.taken = true
	return o.t, true, o.err
}

// Close closes the target unless it was taken; an opening still under way
// is stopped rather than waited for, so that a rewrite whose input failed
// to open says so without waiting for a slow target.
func (o *Opening) Close() {
	if o == nil || o.taken {
		return
	}
	o.cancel()
	<-o.done
	if o.t != nil {
		o.t.Close()
	}
}

// Output is the destination of one rewrite while it is written: the
// target's lock, the staging directory and the savepoint writer.
type Output struct {
	target    string
	lock      *storage.FileLock
	staging   storage.Target
	w         *snapshotfmt.Writer
	temps     []string
	committed bool
	// inBucket says the target lies in a bucket: spill files go to the
	// system's temporary directory.
	inBucket bool
	// checkCopies is Options.CheckCopies.
	checkCopies bool
	// work holds the spill directories of a target in a bucket.
	work []*workdir.Dir
	// Removed lists the temporary directories of killed earlier runs that
	// Create, TempDirUnder in its spill directory, or TempDir for a target
	// in a bucket, deleted.
	Removed []string
	// swept lists the spill directories TempDirUnder has cleaned.
	swept []string
}

// Create checks the target, takes its lock, removes what killed runs into
// it left behind, and stages a new savepoint with metadata meta. input is
// the input savepoint's location. A target in a bucket is written in place
// and published by its _metadata, create-only (see package storage): it
// takes no lock, since of two runs into it one publishes and the other
// fails, and a dead run's data files are orphans, which verify reports.
// Close must be called in every case.
func Create(ctx context.Context, input string, meta *savepoint.Metadata, opts Options) (*Output, error) {
	if err := CheckTargetToOpen(input, opts.Out, opts.Force); err != nil {
		return nil, err
	}
	loc, err := storage.ParseLocation(opts.Out)
	if err != nil {
		return nil, err
	}
	if loc.IsBucket() {
		return createInBucket(ctx, loc, meta, opts)
	}
	target := loc.Path
	base := filepath.Base(target)
	lock, err := lockTarget(filepath.Join(filepath.Dir(target), storage.TempPrefix+base+".lock"))
	if err != nil {
		return nil, err
	}
	o := &Output{target: target, lock: lock}
	if o.Removed, err = removeStale(target); err != nil {
		o.Close()
		return nil, err
	}
	// The target is checked again under the lock: a run that finished in
	// the meantime may have created it.
	if err := CheckTarget(input, opts.Out, opts.Force); err != nil {
		o.Close()
		return nil, err
	}
	if free, ok := freeBytes(filepath.Dir(target)); ok && opts.Need > 0 && free < opts.Need {
		o.Close()
		return nil, fmt.Errorf("rewrite: %s has %s free, the rewrite needs about %s", filepath.Dir(target), sizeString(free), sizeString(opts.Need))
	}
	if o.staging, err = storage.Stage(target, opts.Force); err != nil {
		o.Close()
		return nil, err
	}
	if o.w, err = snapshotfmt.NewWriter(o.staging, meta, opts.Writer); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func createInBucket(ctx context.Context, loc storage.Location, meta *savepoint.Metadata, opts Options) (*Output, error) {
	t, ok, err := opts.Opened.Take(opts.Out, opts.Force)
	if !ok {
		t, err = storage.OpenTarget(ctx, opts.Out, storage.TargetOptions{Force: opts.Force, Options: storage.Options{Counters: opts.Counters}})
	}
	if err != nil {
		return nil, err
	}
	o := &Output{target: loc.String(), staging: t, inBucket: true, checkCopies: opts.CheckCopies}
	if o.w, err = snapshotfmt.NewWriter(t, meta, opts.Writer); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

// DataFile writes one data file of the output; SegmentWriter one segment
// of it. Entries come in the order the savepoint format gives (package
// snapshotfmt): a rewrite states what it writes, the format how.
type (
	DataFile      = snapshotfmt.DataFileWriter
	SegmentWriter = snapshotfmt.SegmentWriter
)

// CreateFile creates a data file of the output. Several may be written at
// once, each by one goroutine.
func (o *Output) CreateFile(ctx context.Context, name string) (*DataFile, error) {
	return o.w.CreateDataFile(ctx, name)
}

// TempDir creates a directory for spill files beside the target, named
// like a staging directory so that a killed run's is removed by the next
// run into the same target; for a target in a bucket, which no lock
// guards, a work directory (package workdir) in the system's temporary
// directory, whose creation removes those of killed runs. Close removes
// it.
func (o *Output) TempDir() (string, error) {
	if o.inBucket {
		d, err := workdir.Create("", storage.TempPrefix+filepath.Base(o.target)+"-")
		if err != nil {
			return "", err
		}
		o.Removed = append(o.Removed, d.Removed...)
		o.work = append(o.work, d)
		return d.Path, nil
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.target), storage.TempPrefix+filepath.Base(o.target)+"-")
	if err != nil {
		return "", err
	}
	o.temps = append(o.temps, dir)
	return dir, nil
}

// TempDirUnder is TempDir in under, a spill directory the caller chose.
// Its name carries the target's name and a digest of its path, so that,
// for a local target, whose lock the rewrite holds, the directories that
// killed runs into the same target left in under are removed the first
// time, and those of runs into other targets are not. Close removes it.
func (o *Output) TempDirUnder(under string) (string, error) {
	abs, err := filepath.Abs(o.target)
	if o.inBucket || err != nil {
		abs = o.target
	}
	sum := sha256.Sum256([]byte(abs))
	name := filepath.Base(o.target) + "-" + hex.EncodeToString(sum[:4])
	if o.lock != nil && !slices.Contains(o.swept, under) {
		entries, err := os.ReadDir(under)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if staleFor(e.Name(), name) {
				if err := os.RemoveAll(filepath.Join(under, e.Name())); err != nil {
					return "", fmt.Errorf("rewrite: removing %s, left in %s by an earlier run: %w", e.Name(), under, err)
				}
				o.Removed = append(o.Removed, filepath.Join(under, e.Name()))
			}
		}
		o.swept = append(o.swept, under)
	}
	dir, err := os.MkdirTemp(under, storage.TempPrefix+name+"-")
	if err != nil {
		return "", err
	}
	o.temps = append(o.temps, dir)
	return dir, nil
}

// Commit writes the metadata and publishes the savepoint at the target.
func (o *Output) Commit(ctx context.Context) error {
	if err := o.w.Finish(ctx); err != nil {
		return err
	}
	o.committed = true
	return nil
}

// Close aborts the savepoint unless it was committed, removes the spill
// directories and releases the lock.
func (o *Output) Close() error {
	var errs []error
	if o.w != nil && !o.committed {
		errs = append(errs, o.w.Abort())
	} else if o.w == nil && o.staging != nil {
		errs = append(errs, o.staging.Abort())
	}
	if o.staging != nil {
		errs = append(errs, o.staging.Close())
	}
	for _, d := range o.temps {
		errs = append(errs, os.RemoveAll(d))
	}
	for _, d := range o.work {
		errs = append(errs, d.Remove())
	}
	if o.lock != nil {
		errs = append(errs, o.lock.Release())
		o.lock = nil
	}
	return errors.Join(errs...)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
