package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// When the keeper releases memory after speech: once the engine has been
// idle memoryIdleRelease, and every memoryBusyRelease while it keeps
// speaking (README "## Memory").
const (
	memoryIdleRelease = time.Second
	memoryBusyRelease = 2 * time.Second
	memoryTick        = 250 * time.Millisecond
)

// memoryKeeper gives memory back to the kernel after speech: the engine
// marks when synthesis starts and ends, the keeper's goroutine releases
// once the engine has been idle a while after a burst, and every so often
// during a long one.
type memoryKeeper struct {
	release func(idle bool) // idle: no synthesis is running
	idle    time.Duration   // after the last synthesis ended
	busy    time.Duration   // between releases while synthesis goes on

	running atomic.Int64 // synthesis calls in progress
	dirty   atomic.Bool  // synthesis since the last release
	lastEnd atomic.Int64 // unix nanos: the last synthesis ended
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
}

// startMemoryKeeper starts the keeper's goroutine; close stops it.
func startMemoryKeeper(release func(idle bool), idle, busy time.Duration) *memoryKeeper {
	k := &memoryKeeper{release: release, idle: idle, busy: busy, stop: make(chan struct{})}
	k.wg.Add(1)
	go k.loop()
	return k
}

// begin marks synthesis starting; call the func it returns when it ends.
func (k *memoryKeeper) begin() (end func()) {
	k.running.Add(1)
	k.dirty.Store(true)
	return func() {
		k.lastEnd.Store(time.Now().UnixNano())
		// Again: a release during the synthesis did not see its end.
		k.dirty.Store(true)
		k.running.Add(-1)
	}
}

func (k *memoryKeeper) loop() {
	defer k.wg.Done()
	t := time.NewTicker(memoryTick)
	defer t.Stop()
	lastRelease := time.Now()
	for {
		select {
		case <-k.stop:
			return
		case now := <-t.C:
			if !k.due(now, lastRelease) {
				continue
			}
			k.dirty.Store(false)
			k.release(k.running.Load() == 0)
			lastRelease = time.Now()
		}
	}
}

// due reports whether the keeper should release now.
func (k *memoryKeeper) due(now, lastRelease time.Time) bool {
	if !k.dirty.Load() {
		return false
	}
	if k.running.Load() > 0 {
		return now.Sub(lastRelease) >= k.busy
	}
	return now.Sub(time.Unix(0, k.lastEnd.Load())) >= k.idle
}

// close stops the keeper and waits for its goroutine.
func (k *memoryKeeper) close() {
	k.once.Do(func() { close(k.stop) })
	k.wg.Wait()
}
