// Package window is the engine's windowing, as Flink's WindowOperator has
// it: a keyed stream cut into event-time or processing-time windows
// (tumbling, sliding, session), each window's contents folded by a reduce
// or aggregate function or kept for a process window function, fired by a
// trigger (event time, processing time, count, purging), kept open for an
// allowed lateness, and late records sent to a side output.
//
// It sits on the engine's public API: a window operator is a keyed
// process function whose state is ordinary keyed state, so every tool
// sees it. As in Flink, a window's contents live in the state
// "window-contents" under the time-window namespace (start and end, eight
// bytes each), the trigger's own state (the count trigger's "count") in
// the same namespace, a session's merged windows in the map state
// "merging-window-set" (window → the window its state lives in), and the
// trigger and cleanup timers in the operator's timer services, namespaced
// by the window too (engine.TimerNamespace). Checkpoints, savepoints,
// rescale and restore at another parallelism or on the other backend thus
// carry open windows like any keyed state.
//
// Times are epoch milliseconds; a window [Start, End) fires at End-1, its
// maximum timestamp, and what it emits carries that timestamp.
package window
