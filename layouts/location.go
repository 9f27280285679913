package layouts

import (
	"context"
	"errors"

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
	loc, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if !loc.IsBucket() {
		if opts.Counters == nil {
			return Open(ctx, loc.Path)
		}
		dir, err := storage.OpenDir(ctx, loc.Path, opts)
		if err != nil {
			return nil, err
		}
		return open(ctx, dir, loc.Path, Options{})
	}
	dir, err := storage.OpenDir(ctx, location, opts)
	if err != nil {
		return nil, err
	}
	src, err := open(ctx, dir, "", Options{})
	if err != nil {
		dir.Close()
		return nil, err
	}
	switch s := src.(type) {
	case *snapshotfmt.Reader:
		return &bucketReader{Reader: s, dir: dir}, nil
	case *flinksource.Source:
		return &bucketFlink{Source: s, dir: dir}, nil
	}
	return &bucketSource{Source: src, dir: dir}, nil
}

// bucketSource is a Source read from a bucket, which closes the bucket
// after itself.
type bucketSource struct {
	savepoint.Source
	dir storage.DirCloser
}

func (s *bucketSource) Close() error { return errors.Join(s.Source.Close(), s.dir.Close()) }

// bucketFlink is an Apache Flink savepoint read from a bucket. It keeps the
// source's own methods: its walk, which counts the segments in the read
// that scans them (Flink keeps no index), its warnings, and its reader,
// for the rewrites and diff.
type bucketFlink struct {
	*flinksource.Source
	dir storage.DirCloser
}

func (s *bucketFlink) Close() error { return errors.Join(s.Source.Close(), s.dir.Close()) }

// Unwrap is the source itself, whose reader the Flink rewrites use.
func (s *bucketFlink) Unwrap() savepoint.Source { return s.Source }

// bucketReader is a stateproc savepoint read from a bucket. It keeps the
// reader's own methods, which the rewrites use to copy segments as they
// are stored.
type bucketReader struct {
	*snapshotfmt.Reader
	dir storage.DirCloser
}

func (s *bucketReader) Close() error { return errors.Join(s.Reader.Close(), s.dir.Close()) }

// Canonical is the reader itself, for the rewrites' copies.
func (s *bucketReader) Canonical() *snapshotfmt.Reader { return s.Reader }
