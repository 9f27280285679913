package layouts

import (
	"context"
	"errors"
	"io"

	"github.com/stateproc/stateproc/flinkfmt/flinksource"
	"github.com/stateproc/stateproc/savepoint"
	"github.com/stateproc/stateproc/snapshotfmt"
	"github.com/stateproc/stateproc/storage"
)

// OpenLocation opens the savepoint at a location: a plain path or file://
// URL as Open does, or a prefix in a bucket (s3://, gs://, azblob://, see
// storage.ParseLocation). A bucket's stateproc savepoint is opened lazily:
// _metadata is read now, and each data file when a segment of it is first
// read, so that what reads the index alone costs one object. The returned
// Source releases the bucket's connection when closed; opts.Counters, when
// set, counts what is read.
func OpenLocation(ctx context.Context, location string, opts storage.Options) (savepoint.Source, error) {
	return OpenLocationWith(ctx, location, Options{Store: opts})
}

// OpenLocationWith is OpenLocation with options. In a bucket as on disk, an
// Apache Flink checkpoint's chk-<id> beside its job's shared/ or taskowned/
// is read with the files it shares, and the job's directory as its newest
// checkpoint.
func OpenLocationWith(ctx context.Context, location string, o Options) (savepoint.Source, error) {
	loc, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if !loc.IsBucket() {
		if o.Store.Counters == nil {
			return OpenWith(ctx, loc.Path, o)
		}
		dir, err := storage.OpenDir(ctx, loc.Path, o.Store)
		if err != nil {
			return nil, err
		}
		o.mapped = newMappedDirs(ctx, o)
		src, err := open(ctx, dir, loc.Path, o)
		return closingLocal(src, err, dir)
	}
	dir, err := storage.OpenDir(ctx, location, o.Store)
	if err != nil {
		return nil, err
	}
	o.bucket, o.mapped = &loc, newMappedDirs(ctx, o)
	src, err := open(ctx, dir, "", o)
	if errors.Is(err, savepoint.ErrNotSavepoint) {
		if job, jerr := openBucketJob(ctx, dir, o); job != nil || jerr != nil {
			src, err = job, jerr
		}
	}
	if err != nil {
		dir.Close()
		return nil, err
	}
	return withCloser(src, dir), nil
}

// withCloser is src, which closes c after itself. It keeps the methods of
// the layouts' own sources that the tools look for.
func withCloser(src savepoint.Source, c io.Closer) savepoint.Source {
	switch s := src.(type) {
	case *snapshotfmt.Reader:
		return &bucketReader{Reader: s, dir: c}
	case *flinksource.Source:
		return &flinkSource{Source: s, closers: []io.Closer{c}}
	case *flinkSource:
		s.closers = append(s.closers, c)
		return s
	}
	return &bucketSource{Source: src, dir: c}
}

// bucketSource is a Source read from a bucket, which closes the bucket
// after itself.
type bucketSource struct {
	savepoint.Source
	dir io.Closer
}

func (s *bucketSource) Close() error { return errors.Join(s.Source.Close(), s.dir.Close()) }

// bucketReader is a stateproc savepoint read from a bucket. It keeps the
// reader's own methods, which the rewrites use to copy segments as they
// are stored.
type bucketReader struct {
	*snapshotfmt.Reader
	dir io.Closer
}

func (s *bucketReader) Close() error { return errors.Join(s.Reader.Close(), s.dir.Close()) }

// Canonical is the reader itself, for the rewrites' copies.
func (s *bucketReader) Canonical() *snapshotfmt.Reader { return s.Reader }
