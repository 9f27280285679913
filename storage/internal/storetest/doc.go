// Package storetest starts real object stores for the storage tests: an
// S3-compatible server, versitygw, with a fault-injecting proxy in front of
// it (throttling
// answers, connection resets before an answer or in the middle of a body,
// and S3's multipart rule that every part but the last holds at least 5 MiB,
// which a test server need not enforce but S3 does); and Azurite, the Azure
// Storage emulator. (GCS is tested against fake-gcs-server, a Go module the
// tests run in process.)
//
// The versitygw binary is found through STATEPROC_VERSITYGW, then $GOBIN, then
// $(go env GOPATH)/bin, then PATH. Without it the tests skip, except under
// CI (CI set in the environment), where they fail: CI installs it. To run
// them locally:
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//	go test ./storage/...
package storetest
