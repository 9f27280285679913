// Package flow is how records and control events move between the
// engine's subtasks: the control events that travel in order with the
// records (watermarks, checkpoint barriers, a channel's status, its end),
// the gate through which a subtask reads its input channels, aligns
// barriers and combines watermarks (in watermark order under
// DeterministicTime), and the watermark alignment groups of sources. The
// engine's typed runners use it with their own checkpoint as the barrier
// and their own subtask as the group member; it imports nothing of the
// engine, and job code never sees it.
package flow
