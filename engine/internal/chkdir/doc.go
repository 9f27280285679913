// Package chkdir is the layout of the engine's checkpoint root on disk:
// the names of checkpoint directories and how to list them, the manifest
// of an incremental checkpoint (_incremental.json) with the native
// database files it lists under shared/ and in the checkpoint's directory,
// and linking or copying those files with their CRC-32C. The engine's
// checkpoint store (chkstore) writes, retains and opens checkpoints
// through it; job
// code never names it. The whole layout is described in the engine's
// package documentation.
package chkdir
