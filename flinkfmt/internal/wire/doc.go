// Package wire reads the big-endian encodings of Java's DataOutputStream
// (and Flink's DataOutputView) from untrusted bytes, for the Flink layout
// reader in package flinkfmt and its serializer snapshots in flinkfmt/typeser.
//
// A Buf reads from one slice and never allocates more than the bytes that
// remain: every length is checked against them first. Its first error is
// sticky, so a decoder can read a whole structure and check Err once; the
// error names the offset where reading failed.
package wire
