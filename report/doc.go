// Package report builds stateproc report: one self-contained HTML page,
// with charts, of what one or several savepoints of a job hold. It is the
// library behind the command, which only parses flags.
//
// Build gathers the figures and Write renders them. The figures of the
// newest savepoint come from inspect (the index, a scan with TTL ages and
// the heaviest keys), from a pass of its own over the same segments (the
// bytes of every key group, a histogram of value sizes, a histogram of
// timers per key) and from sizing (the heap against Pebble, with size's
// recommendation). The older savepoints are read from their index only,
// for the growth of every state over time; Unbounded flags the states
// whose growth does not level off.
//
// The charts are SVG drawn on the server by the package's own small writer
// (svg.go: axes, bars, lines, a legend) and inlined into the page, which has no script and loads nothing: it reads the same
// offline. Text that comes from a savepoint (uids, state names, keys) is
// only ever written by html/template, never into an SVG.
//
// It reads only through the read seam (savepoint.Source), inspect and
// sizing, and sits in the tools layer beside them.
package report
