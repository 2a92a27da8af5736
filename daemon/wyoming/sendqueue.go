package wyoming

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// errQueueClosed is put's answer after close.
var errQueueClosed = errors.New("send queue closed")

// sendQueue is one connection's outgoing events, written to the socket by
// a goroutine of its own, so that a client that reads slowly (or not at
// all) holds up only itself: its request gives back the synthesis slot
// while it waits for room (conn.write), and another client's synthesis
// goes on.
//
// The contract:
//   - put takes a frame (one encoded event, encodeEvent's buffers, not
//     copied) and returns at once. It
//     refuses it (ok false) while max bytes are already queued; an empty
//     queue takes a frame of any size. The caller then waits with
//     waitRoom and tries again.
//   - The writer writes frames in the order put took them, as many at a
//     time as are queued, each write bounded by the write timeout. A
//     queue that stays full that long is a client that does not read: the
//     first write error is kept, the connection is closed (which ends its
//     reads too), and put, waitRoom and flush return that error from then
//     on. Frames not yet written are dropped.
//   - flush waits until everything put took is written, or the error, or
//     ctx. close lets the writer write what is queued and end; done is
//     closed when it has ended.
type sendQueue struct {
	c       net.Conn
	max     int
	timeout time.Duration
	wrote   func(n int64) // bytes written, for the server's counters

	mu     sync.Mutex
	frames net.Buffers // the frames' pieces, in order
	queued int         // bytes put took and the writer has not finished writing
	err    error
	closed bool

	wake chan struct{} // cap 1: frames were queued, or close
	room chan struct{} // cap 1: frames were written
	done chan struct{} // closed when the writer has ended
}

func newSendQueue(c net.Conn, max int, timeout time.Duration, wrote func(int64)) *sendQueue {
	q := &sendQueue{c: c, max: max, timeout: timeout, wrote: wrote,
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// put queues frame; ok is false when the queue is full (see the type).
func (q *sendQueue) put(frame net.Buffers) (ok bool, err error) {
	size := 0
	for _, b := range frame {
		size += len(b)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.err != nil:
		return false, q.err
	case q.closed:
		return false, errQueueClosed
	case q.queued > 0 && q.queued+size > q.max:
		return false, nil
	}
	q.frames = append(q.frames, frame...)
	q.queued += size
	signal(q.wake)
	return true, nil
}

// waitRoom waits until the writer has written something since the last
// call (or fails, or ctx ends).
func (q *sendQueue) waitRoom(ctx context.Context) error {
	select {
	case <-q.room:
		return q.failure()
	case <-q.done:
		if err := q.failure(); err != nil {
			return err
		}
		return errQueueClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush waits until every frame put took is written.
func (q *sendQueue) flush(ctx context.Context) error {
	for {
		q.mu.Lock()
		err, empty := q.err, q.queued == 0
		q.mu.Unlock()
		if err != nil || empty {
			return err
		}
		if err := q.waitRoom(ctx); err != nil {
			return err
		}
	}
}

func (q *sendQueue) failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// close ends the writer once what is queued is written.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
}

func (q *sendQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.frames) == 0 && !q.closed {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		batch := q.frames
		q.frames = nil
		q.mu.Unlock()
		if len(batch) == 0 {
			return // closed, and everything written
		}
		size := 0
		for _, f := range batch {
			size += len(f)
		}
		q.c.SetWriteDeadline(time.Now().Add(q.timeout))
		n, err := batch.WriteTo(q.c)
		q.wrote(n)
		q.mu.Lock()
		q.queued -= size
		if err != nil {
			q.err = fmt.Errorf("write to client: %w", err)
			q.frames, q.queued = nil, 0
		}
		q.mu.Unlock()
		signal(q.room)
		if err != nil {
			q.c.Close()
			return
		}
	}
}
