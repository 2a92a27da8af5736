package audio

import "context"

// Stream runs produce on a goroutine of its own and hands every item it
// emits to consume, in order, on the caller's goroutine. It is how speech
// is played sentence by sentence (the daemon's worker and mynah say): the
// engine produces sentence n+1 while the sink plays sentence n.
//
// The lookahead is exactly one item. emit(v) returns only once consume has
// been handed v, which is after consume returned for the item before: so
// while consume works on item n, produce may make item n+1 and offer it,
// but it cannot begin item n+2 until item n has been consumed completely.
// Nothing is buffered; at most two items are alive, the one being
// consumed and the one produce holds. (A channel with a buffer of one
// would let produce run two items ahead.)
//
// Once Stream is stopping, emit returns an error without blocking (the
// context's error), and produce should return. Stream always waits for
// produce to return: the goroutine it starts never outlives it.
//
// Stream returns nil once produce returned nil and everything it emitted
// was consumed. Otherwise it returns the first of: ctx's error when ctx
// ended (cancellation wins, since the errors it causes on either side are
// only its echo), consume's error (to stop early, consume returns an error
// of its own choosing), produce's error, each as it is.
func Stream[T any](ctx context.Context,
	produce func(ctx context.Context, emit func(T) error) error,
	consume func(ctx context.Context, item T) error,
) error {
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	items := make(chan T) // unbuffered: see the lookahead above
	produced := make(chan error, 1)
	go func() {
		produced <- produce(pctx, func(v T) error {
			select {
			case items <- v:
				return nil
			case <-pctx.Done():
				return pctx.Err()
			}
		})
	}()
	// finish stops produce, waits for it and says why the stream ended.
	finish := func(err error) error {
		stop()
		<-produced
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	for {
		select {
		case v := <-items:
			if ctx.Err() != nil {
				return finish(nil) // ended while v was on offer: drop it
			}
			if err := consume(ctx, v); err != nil {
				return finish(err)
			}
		case err := <-produced:
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return err
		case <-ctx.Done():
			return finish(nil)
		}
	}
}
