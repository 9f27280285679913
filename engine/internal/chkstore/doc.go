// Package chkstore writes, retains and opens the engine's checkpoints: the
// store of one run attempt begins a checkpoint or savepoint with its
// canonical writer, puts a Pebble subtask's native checkpoint into the
// shared files and the checkpoint's directory, publishes the checkpoint
// with its _metadata last, and deletes the checkpoints and shared files
// retention no longer keeps; Open reads a savepoint or an incremental
// checkpoint back as a savepoint.Source. It sits below the engine's
// coordinator and subtasks and above chkdir, which names the files; job
// code never sees it. The layout is described in the engine's package
// documentation.
package chkstore
