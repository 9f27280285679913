package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Binary returns the path of the versitygw binary, or "".
func Binary() string {
	if p := os.Getenv("STATEPROC_VERSITYGW"); p != "" {
		return p
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	p, _ := exec.LookPath("versitygw")
	return p
}

// Server is a versitygw process serving a temporary directory on a
// loopback port.
type Server struct {
	// Addr is host:port of the S3 endpoint.
	Addr                 string
	AccessKey, SecretKey string
	bin, data, iam       string
	cmd                  *exec.Cmd
	exited               chan struct{}
}

// Start starts versitygw with keys of its own and stops it when the test
// ends. Without the binary it skips the test, or fails it under CI.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "versitygw not found (install it: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, or set STATEPROC_VERSITYGW)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s, err := Launch(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartWithBucket is Start, with the credentials in the environment (Env)
// and the bucket created: what a test of a command against a bucket needs.
func StartWithBucket(t testing.TB, bucket string) *Server {
	t.Helper()
	s := Start(t)
	s.Env(t)
	s.Bucket(t, bucket)
	return s
}

// Launch starts the versitygw binary bin on a free loopback port, serving
// a new directory under dir, for a program that is not a test (a
// benchmark). The caller stops it.
func Launch(bin, dir string) (*Server, error) {
	s := &Server{AccessKey: "stateproc-test", SecretKey: "stateproc-test-secret-" + fmt.Sprint(time.Now().UnixNano()),
		bin: bin, data: filepath.Join(dir, "data"), iam: filepath.Join(dir, "iam")}
	for _, d := range []string{s.data, s.iam} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	var err error
	if s.Addr, err = freeAddr(); err != nil {
		return nil, err
	}
	return s, s.start()
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, "--port", s.Addr, "--iam-dir", s.iam, "posix", s.data)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	log, err := os.Create(filepath.Join(filepath.Dir(s.data), "versitygw.log"))
	if err != nil {
		return err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting versitygw: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { s.cmd.Wait(); log.Close(); close(s.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.exited:
			b, _ := os.ReadFile(log.Name())
			s.cmd = nil
			return fmt.Errorf("versitygw exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("versitygw does not listen on %s after 20s", s.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server; the objects stay on disk for Restart.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// CPU returns the CPU time the running server has used so far, and false
// where it cannot be known (no server, or no /proc).
func (s *Server) CPU() (time.Duration, bool) {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0, false
	}
	return processCPU(s.cmd.Process.Pid)
}

// Endpoint is the server's URL.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// Env sets the credentials in the environment, where the AWS SDK looks for
// them, for the rest of the test.
func (s *Server) Env(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	// The SDK must not look for a profile or an instance role here.
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// URL is the s3:// location of prefix in bucket, through endpoint (the
// server's or a proxy's).
func URL(endpoint, bucket, prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&region=us-east-1&use_path_style=true", bucket, prefix, endpoint)
}

// Client is an S3 client of the server, for what the tests do behind the
// storage package's back.
func (s *Server) Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Bucket creates a bucket.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	if err := s.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
}

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(name string) error {
	if _, err := s.Client(s.Endpoint()).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", name, err)
	}
	return nil
}

// Upload puts the files of the local directory dir, those of its
// subdirectories too, under prefix of bucket, behind the storage
// package's back, and returns the bytes it put, by name relative to dir.
func (s *Server) Upload(t testing.TB, dir, bucket, prefix string) map[string]int64 {
	t.Helper()
	c := s.Client(s.Endpoint())
	sizes := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
			Key: aws.String(prefix + "/" + name), Body: bytes.NewReader(b)}); err != nil {
			return err
		}
		sizes[name] = int64(len(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

// Objects returns the objects of bucket under prefix (a directory: the
// keys below prefix + "/"), by their names below it, with their bytes: what
// Upload put there, or what a command wrote. An empty prefix is the whole
// bucket, by key.
func (s *Server) Objects(t testing.TB, bucket, prefix string) map[string][]byte {
	t.Helper()
	c := s.Client(s.Endpoint())
	ctx := context.Background()
	out := map[string][]byte{}
	if prefix != "" {
		prefix += "/"
	}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			r, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			var gone *s3types.NoSuchKey
			if errors.As(err, &gone) {
				continue // deleted since the listing: not there
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = b
		}
	}
	return out
}
