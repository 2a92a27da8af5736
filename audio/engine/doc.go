// Package engine is the speech engine every front end shares (mynahd's MQTT
// daemon, mynah say): Engine opens the installed voices of every kind,
// speaks requests sentence by sentence with the phrase cache (package
// cache) in front of synthesis, clones speakers, and picks each voice's
// precision.
//
// Loaded voices stay warm in a least-recently-used session cache (lru.go):
// bounded by count and bytes, the default voice and the configured ones
// pinned, concurrent first uses loading a voice once, and a voice never
// closed while it speaks. Under memory pressure (pressure.go: the cgroup v2
// limit where one is set, else a configured budget of anonymous memory) the
// cloning voices' KV state goes first, then idle unpinned voices.
package engine
