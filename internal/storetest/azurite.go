package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// Azurite's well-known development account, the one its documentation
// gives: the emulator accepts no other without configuration.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// StartAzurite starts Azurite's blob service on a loopback port with one
// container and stops it when the test ends. It sets the account and key
// in the environment, where the storage package's Azure client finds
// them, and returns the URL parameters that point a location at the
// emulator. The container is created through Azure's SDK, a client
// independent of the one under test. Without the binary it skips the
// test, or fails it under CI.
func StartAzurite(t testing.TB, container string) (query string) {
	t.Helper()
	bin := os.Getenv("STATEPROC_AZURITE")
	if bin == "" {
		bin, _ = exec.LookPath("azurite-blob")
	}
	if bin == "" {
		msg := "azurite-blob not found (npm install --prefix DIR azurite@3.37.0, then set STATEPROC_AZURITE=DIR/node_modules/.bin/azurite-blob)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--blobHost", host, "--blobPort", port, "--location", dir, "--silent", "--skipApiVersionCheck", "--loose")
	log, err := os.Create(filepath.Join(dir, "azurite.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting azurite: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	endpoint := fmt.Sprintf("http://%s/%s", addr, azuriteAccount)
	cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azblob.NewClientWithSharedKeyCredential(endpoint, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := client.CreateContainer(context.Background(), container, nil)
		if err == nil {
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("azurite exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("azurite does not answer on %s after 30s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Setenv("AZURE_STORAGE_ACCOUNT", azuriteAccount)
	t.Setenv("AZURE_STORAGE_KEY", azuriteKey)
	return "domain=" + addr + "&protocol=http&localemu=true"
}
