package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseLocation(t *testing.T) {
	for in, want := range map[string]Location{
		"sp":                   {Scheme: "file", Path: "sp"},
		"/var/state/sp/":       {Scheme: "file", Path: "/var/state/sp"},
		"file:///var/state/sp": {Scheme: "file", Path: "/var/state/sp"},
		"file://localhost/x":   {Scheme: "file", Path: "/x"},
		`C:\state\sp`:          {Scheme: "file", Path: filepath.Clean(`C:\state\sp`)},
		"s3://prod-state/savepoints/savepoint-4711":                    {Scheme: "s3", Bucket: "prod-state", Prefix: "savepoints/savepoint-4711"},
		"s3://b/p/?endpoint=http://127.0.0.1:9000&use_path_style=true": {Scheme: "s3", Bucket: "b", Prefix: "p"},
		"gs://bucket/a/b":    {Scheme: "gs", Bucket: "bucket", Prefix: "a/b"},
		"azblob://container": {Scheme: "azblob", Bucket: "container"},
		"S3://Bucket/sp":     {Scheme: "s3", Bucket: "Bucket", Prefix: "sp"},
	} {
		got, err := ParseLocation(in)
		if err != nil {
			t.Errorf("ParseLocation(%q): %v", in, err)
			continue
		}
		got.Query = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseLocation(%q) = %+v, want %+v", in, got, want)
		}
	}
	loc, _ := ParseLocation("s3://b/p?endpoint=http://u:secret@h:9000&region=eu-west-1")
	if loc.Query.Get("region") != "eu-west-1" || strings.Contains(loc.String(), "secret") || loc.String() != "s3://b/p" {
		t.Errorf("parameters %v, shown as %q", loc.Query, loc.String())
	}
	for _, bad := range []string{"", "http://host/x", "s3:///prefix", "s3://b/../x", "s3://b/a//c", "file://otherhost/x", "file:///x?y=1"} {
		if _, err := ParseLocation(bad); err == nil {
			t.Errorf("ParseLocation(%q) accepted", bad)
		}
	}
}

func TestOpenLocalTargetAndDir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "sp")
	tg, err := OpenTarget(ctx, "file://"+dir, TargetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := tg.CreateNamed(ctx, "data", ".bin")
	if err != nil {
		t.Fatal(err)
	}
	nw.Write([]byte("named bytes"))
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "data-361c048f0b071798.bin"; nw.Name() != want {
		t.Fatalf("content name %q", nw.Name())
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("0123456789"), 0o644)
	if err := tg.Copy(ctx, LocalDir(src), "f", "copied"); err != nil {
		t.Fatal(err)
	}
	k, _ := tg.Compose(ctx, "composed")
	sf, _ := LocalDir(src).Open(ctx, "f")
	k.Write([]byte("<"))
	k.CopyRange(ctx, sf, 2, 3)
	k.Write([]byte(">"))
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ := tg.Create(ctx, MetadataName)
	w.Write([]byte("m"))
	w.Close()
	if err := tg.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := d.List(ctx)
	if strings.Join(names, ",") != "_metadata,composed,copied,"+nw.Name() {
		t.Fatalf("List = %v", names)
	}
	f, _ := d.Open(ctx, "composed")
	b := make([]byte, f.Size())
	f.ReadAt(b, 0)
	if string(b) != "<234>" {
		t.Fatalf("composed = %q", b)
	}
	if c := CountersOf(d); c.BytesRead.Load() != 5 {
		t.Fatalf("BytesRead = %d", c.BytesRead.Load())
	}
	if _, err := OpenTarget(ctx, dir, TargetOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("OpenTarget over a savepoint = %v", err)
	}
	orphans, err := Orphans(ctx, d, []string{"composed", "copied"})
	if err != nil || len(orphans) != 1 || orphans[0].Name != nw.Name() {
		t.Fatalf("Orphans = %v, %v", orphans, err)
	}
	if removed, err := RemoveOrphans(ctx, d, referencing("composed", "copied"), 0, time.Now()); err != nil || len(removed) != 1 {
		t.Fatalf("RemoveOrphans = %v, %v", removed, err)
	}
	if names, _ := d.List(ctx); len(names) != 3 {
		t.Fatalf("after RemoveOrphans: %v", names)
	}
}

func referencing(names ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return names, nil }
}
