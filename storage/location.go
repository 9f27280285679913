package storage

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Location is a parsed location string: a local directory, or a prefix in
// a bucket that holds a savepoint's files as objects named prefix/name.
type Location struct {
	// Scheme is "file" for a local directory, else "s3", "gs" or "azblob".
	Scheme string
	// Path is the local directory, for Scheme "file".
	Path string
	// Bucket and Prefix say where the objects lie; Prefix has no leading
	// or trailing slash and may be empty (the bucket's root).
	Bucket, Prefix string
	// Query holds the URL's parameters, for the store's driver: for S3
	// endpoint, region, use_path_style, profile and the others gocloud
	// accepts.
	Query url.Values
}

// bucketSchemes are the URL schemes served through gocloud.dev/blob.
var bucketSchemes = map[string]bool{"s3": true, "gs": true, "azblob": true}

// ParseLocation parses a plain path, a file:// URL or a bucket URL
// (s3://bucket/prefix?endpoint=…, gs://bucket/prefix, azblob://container/prefix).
func ParseLocation(s string) (Location, error) {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || len(scheme) < 2 || strings.ContainsAny(scheme, `/\`) {
		// A plain path; "C:" of a Windows path is no scheme.
		if s == "" {
			return Location{}, fmt.Errorf("storage: empty location")
		}
		return Location{Scheme: "file", Path: filepath.Clean(s)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("storage: location %q: %w", s, err)
	}
	switch scheme = strings.ToLower(u.Scheme); {
	case scheme == "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("storage: location %q: a file URL names no host other than localhost", s)
		}
		if u.Path == "" || len(u.Query()) > 0 {
			return Location{}, fmt.Errorf("storage: location %q: a file URL is file:///absolute/path, without parameters", s)
		}
		return Location{Scheme: "file", Path: filepath.Clean(filepath.FromSlash(u.Path))}, nil
	case bucketSchemes[scheme]:
		if u.Host == "" {
			return Location{}, fmt.Errorf("storage: location %q names no bucket", s)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" {
			if err := CheckName(prefix); err != nil {
				return Location{}, fmt.Errorf("storage: location %q: prefix %w", s, err)
			}
		}
		return Location{Scheme: scheme, Bucket: u.Host, Prefix: prefix, Query: u.Query()}, nil
	}
	return Location{}, fmt.Errorf("storage: location %q: unsupported scheme %q (plain paths, file://, s3://, gs:// and azblob:// are)", s, scheme)
}

// IsBucket reports whether the location is in an object store.
func (l Location) IsBucket() bool { return l.Scheme != "file" }

// String gives the location without its parameters, for messages: an
// endpoint may carry credentials in its user part.
func (l Location) String() string {
	if !l.IsBucket() {
		return l.Path
	}
	s := l.Scheme + "://" + l.Bucket
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s
}

// URL gives the location back as a string that ParseLocation reads, with
// its parameters: a plain path for a local directory.
func (l Location) URL() string {
	if !l.IsBucket() {
		return l.Path
	}
	u := url.URL{Scheme: l.Scheme, Host: l.Bucket, Path: "/" + l.Prefix, RawQuery: l.Query.Encode()}
	return u.String()
}

// Shown is location as messages show it: a bucket URL without its
// parameters, whose endpoint may carry credentials; anything else as it
// is given.
func Shown(location string) string {
	if loc, err := ParseLocation(location); err == nil && loc.IsBucket() {
		return loc.String()
	}
	return location
}

// Join is the location of name, a relative slash-separated name, inside l.
func (l Location) Join(name string) Location {
	if !l.IsBucket() {
		l.Path = filepath.Join(l.Path, filepath.FromSlash(name))
		return l
	}
	l.Prefix = strings.Trim(path.Join(l.Prefix, name), "/")
	return l
}

// Parent is the location that holds l; a bucket's root is its own parent.
func (l Location) Parent() Location {
	if !l.IsBucket() {
		l.Path = filepath.Dir(l.Path)
		return l
	}
	if i := strings.LastIndexByte(l.Prefix, '/'); i >= 0 {
		l.Prefix = l.Prefix[:i]
	} else {
		l.Prefix = ""
	}
	return l
}

// Base is the last element of l: of its path or prefix.
func (l Location) Base() string {
	if !l.IsBucket() {
		return filepath.Base(l.Path)
	}
	return path.Base(l.Prefix)
}

// Options say how a location is opened. The zero value is ready to use.
type Options struct {
	// Retry bounds the retries of bucket requests; the zero value means
	// DefaultRetryPolicy.
	Retry RetryPolicy
	// Counters receives the location's byte and request counts; nil gives
	// it counters of its own (see CountersOf).
	Counters *Counters
}

// DirCloser is a Dir that holds a connection to release.
type DirCloser interface {
	Dir
	io.Closer
}

// OpenDir opens the location for reading. A plain path or file:// URL
// gives the local directory (see LocalDir); a bucket URL gives a Dir whose
// files are read with ranged requests. Nothing is read yet: a missing
// savepoint shows when its first file is opened.
func OpenDir(ctx context.Context, location string, opts Options) (DirCloser, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if opts.Counters == nil {
		opts.Counters = new(Counters)
	}
	if !loc.IsBucket() {
		return &countedLocalDir{newLocalDir(loc.Path), opts.Counters}, nil
	}
	return openBucketDir(ctx, loc, opts)
}

// CountersOf returns the counters of a Dir or Target opened by OpenDir or
// OpenTarget, or nil.
func CountersOf(x any) *Counters {
	if c, ok := x.(interface{ counters() *Counters }); ok {
		return c.counters()
	}
	return nil
}

// countedLocalDir is a local directory whose reads are counted.
type countedLocalDir struct {
	*localDir
	c *Counters
}

func (d *countedLocalDir) counters() *Counters { return d.c }

func (d *countedLocalDir) Open(ctx context.Context, name string) (File, error) {
	f, err := d.localDir.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countedFile{f, d.c}, nil
}

type countedFile struct {
	File
	c *Counters
}

func (f countedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.c.BytesRead.Add(int64(n))
	return n, err
}
