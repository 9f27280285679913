// Package s3local runs the object store the bench programs measure
// against: a versitygw of its own, on a loopback port, behind the tests'
// counting proxy (storetest.Proxy), with the AWS variables of this process
// set for it, so that stateproc run here or in a child finds it.
package s3local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stateproc/stateproc/internal/storetest"
)

// Store is a running server and the proxy in front of it.
type Store struct {
	Srv   *storetest.Server
	Proxy *storetest.Proxy
	dir   string
}

// Start launches versitygw (storetest.Binary) on a directory under work
// (the system's temporary directory when empty), the proxy, and bucket.
func Start(work, bucket string) (*Store, error) {
	bin := storetest.Binary()
	if bin == "" {
		return nil, errors.New("versitygw not found: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, or set STATEPROC_VERSITYGW")
	}
	dir, err := os.MkdirTemp(work, "s3local-")
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir}
	if s.Srv, err = storetest.Launch(bin, dir); err != nil {
		s.Close()
		return nil, err
	}
	if s.Proxy, err = storetest.StartProxy(s.Srv.Endpoint()); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Srv.CreateBucket(bucket); err != nil {
		s.Close()
		return nil, err
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": s.Srv.AccessKey, "AWS_SECRET_ACCESS_KEY": s.Srv.SecretKey,
		"AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true"} {
		os.Setenv(k, v)
	}
	return s, nil
}

// Close stops the proxy and the server and removes the server's data.
func (s *Store) Close() {
	if s.Proxy != nil {
		s.Proxy.Close()
	}
	if s.Srv != nil {
		s.Srv.Stop()
	}
	os.RemoveAll(s.dir)
}

// URL is the location of prefix in bucket, through the proxy.
func (s *Store) URL(bucket, prefix string) string { return storetest.URL(s.Proxy.URL, bucket, prefix) }

// Upload puts the files of the savepoint in dir under prefix of bucket,
// straight to the server, and returns their keys and their bytes.
func (s *Store) Upload(ctx context.Context, dir, bucket, prefix string) (keys []string, size int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	direct := s.Srv.Client(s.Srv.Endpoint())
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		key := prefix + "/" + e.Name()
		_, err = direct.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: f, ContentLength: aws.Int64(st.Size())})
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("uploading %s: %w", e.Name(), err)
		}
		keys = append(keys, key)
		size += st.Size()
	}
	return keys, size, nil
}
