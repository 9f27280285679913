package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavy are packages that once came into the binary and cost every
// command start-up time in package initialisation, though at most one
// command needs them: with Google's GCS SDK, gRPC's xDS balancer with the
// envoy control-plane protos, Cloud Monitoring and the telemetry exporters
// around them; with gonum/plot (once the report's charts), its fonts, its
// LaTeX and PDF back ends; with gocloud's Azure driver, the Azure SDK and
// the Microsoft authentication library of its token credentials (the
// tests still create Azurite's containers with the SDK); tablewriter,
// whose width cache was built at start-up (a test still compares the
// commands' tables with it). gRPC itself stays for now: arrow-go's Parquet
// writer and gocloud link it.
var heavy = []string{
	"github.com/Azure/",
	"github.com/AzureAD/",
	"gocloud.dev/blob/azureblob",
	"gonum.org/v1/plot",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"codeberg.org/go-pdf/",
	"golang.org/x/image/font",
	"cloud.google.com/go/storage",
	"cloud.google.com/go/monitoring",
	"gocloud.dev/blob/gcsblob",
	"google.golang.org/grpc/xds",
	"github.com/envoyproxy/",
	"github.com/cncf/xds/",
	"github.com/GoogleCloudPlatform/opentelemetry-operations-go/",
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/",
	"github.com/olekukonko/",
}

// TestNoHeavyDependencies fails when one of the heavy packages comes back
// into the binary, through any import.
func TestNoHeavyDependencies(t *testing.T) {
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list the binary's dependencies")
		}
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps lists %d packages; the binary has hundreds", len(deps))
	}
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasPrefix(d, h) || strings.HasPrefix(d, h+"/") {
				t.Errorf("the binary links %s (of %s): find the import that brings it with go list -deps -json", d, h)
			}
		}
	}
}
