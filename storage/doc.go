// Package storage is the small interface between savepoints and where their
// files live: open a file for ranged reads, list files, and publish a new
// directory atomically. The local implementation works on a directory; an
// object store (S3, GCS) can implement the same interface with ranged GETs
// and a manifest-last publish.
package storage
