package engine

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// lowPriority runs f on an OS thread of its own at the lowest CPU
// priority (nice 19), so that a background build yields the CPU to
// speech. Linux sets a nice value per thread; the thread is never
// unlocked, so it ends with the goroutine and nothing else ever runs on
// it at that priority (an unprivileged process cannot raise it back).
// Threads that f's code starts inherit the priority: the builds run on
// one intra-op thread, which ONNX Runtime does not start.
func lowPriority(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// At the normal priority if refused: still off the request path.
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
		errc <- f()
	}()
	return <-errc
}
