package audio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// streamRec records one Stream call: which items the producer began and
// when, relative to the consumer, and whether the producer had returned
// by the time Stream did.
type streamRec struct {
	mu       sync.Mutex
	begun    int   // highest item produce has begun; -1 none
	emitErrs int   // emits that returned an error
	consumed []int // items consume was given, in order
	// ahead[n] is how many items past n produce had begun while consume
	// worked on n, read after synctest.Wait at the start and at the end
	// of consume(n): once produce can go no further.
	ahead    []int
	returned bool // produce returned
}

// produce emits items 0..n-1; fail, when set, is asked before each item
// and may return an error for it or block.
func (r *streamRec) produce(n int, fail func(ctx context.Context, i int) error) func(context.Context, func(int) error) error {
	return func(ctx context.Context, emit func(int) error) error {
		defer func() { r.mu.Lock(); r.returned = true; r.mu.Unlock() }()
		for i := range n {
			r.mu.Lock()
			r.begun = i
			r.mu.Unlock()
			if fail != nil {
				if err := fail(ctx, i); err != nil {
					return err
				}
			}
			if err := emit(i); err != nil {
				r.mu.Lock()
				r.emitErrs++
				r.mu.Unlock()
				return err
			}
		}
		return nil
	}
}

// consume records each item; fail, when set, is asked after it.
func (r *streamRec) consume(fail func(ctx context.Context, i int) error) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		r.note(i)
		r.mu.Lock()
		r.consumed = append(r.consumed, i)
		r.mu.Unlock()
		if fail != nil {
			if err := fail(ctx, i); err != nil {
				return err
			}
		}
		r.note(i)
		return nil
	}
}

func (r *streamRec) note(i int) {
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.ahead) <= i {
		r.ahead = append(r.ahead, -1)
	}
	r.ahead[i] = max(r.ahead[i], r.begun-i)
}

func newStreamRec() *streamRec { return &streamRec{begun: -1} }

func TestStreamLookaheadIsOne(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newStreamRec()
				if err := Stream(t.Context(), r.produce(n, nil), r.consume(nil)); err != nil {
					t.Fatal(err)
				}
				want := make([]int, n)
				for i := range want {
					want[i] = min(1, n-1-i) // n+1 is made while n plays; nothing after the last
				}
				if !slices.Equal(r.ahead, want) {
					t.Errorf("%d items: items begun past the one consumed %v, want %v", n, r.ahead, want)
				}
				if len(r.consumed) != n || !slices.IsSorted(r.consumed) {
					t.Errorf("%d items: consumed %v", n, r.consumed)
				}
			})
		})
	}
}

var (
	errProduce = errors.New("produce failed")
	errConsume = errors.New("consume failed")
	errStop    = errors.New("enough")
)

func TestStreamEnds(t *testing.T) {
	// blockOn makes item i wait for the context, like a slow model.
	blockOn := func(at int) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			if i == at {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
	}
	failOn := func(at int, err error) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			if i == at {
				return err
			}
			return nil
		}
	}
	tests := []struct {
		name     string
		n        int
		produce  func(ctx context.Context, i int) error
		consume  func(ctx context.Context, i int) error
		cancelOn int // consume cancels the context at this item; -1 never
		timeout  time.Duration
		want     error
		consumed []int
		emitErrs int // the producer saw an emit fail
	}{
		{name: "all", n: 4, cancelOn: -1, consumed: []int{0, 1, 2, 3}},
		{name: "producer error", n: 4, produce: failOn(2, errProduce), cancelOn: -1,
			want: errProduce, consumed: []int{0, 1}},
		{name: "producer error first", n: 4, produce: failOn(0, errProduce), cancelOn: -1,
			want: errProduce},
		{name: "consumer error", n: 4, consume: failOn(1, errConsume), cancelOn: -1,
			want: errConsume, consumed: []int{0, 1}, emitErrs: 1},
		{name: "early stop at last", n: 4, consume: failOn(3, errStop), cancelOn: -1,
			want: errStop, consumed: []int{0, 1, 2, 3}},
		{name: "cancel mid-stream", n: 6, cancelOn: 2,
			want: context.Canceled, consumed: []int{0, 1, 2}, emitErrs: 1},
		{name: "cancel wins over consumer error", n: 6, consume: failOn(2, errConsume), cancelOn: 2,
			want: context.Canceled, consumed: []int{0, 1, 2}, emitErrs: 1},
		{name: "deadline while producing", n: 6, produce: blockOn(3), cancelOn: -1, timeout: time.Minute,
			want: context.DeadlineExceeded, consumed: []int{0, 1, 2}},
		{name: "deadline before the first", n: 6, produce: blockOn(0), cancelOn: -1, timeout: time.Minute,
			want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tt.timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				r := newStreamRec()
				consume := func(ctx context.Context, i int) error {
					if i == tt.cancelOn {
						cancel()
					}
					if tt.consume != nil {
						return tt.consume(ctx, i)
					}
					return nil
				}
				err := Stream(ctx, r.produce(tt.n, tt.produce), r.consume(consume))
				r.mu.Lock()
				defer r.mu.Unlock()
				if !r.returned {
					t.Errorf("Stream returned before produce did")
				}
				if !errors.Is(err, tt.want) {
					t.Errorf("error %v, want %v", err, tt.want)
				}
				if !slices.Equal(r.consumed, tt.consumed) {
					t.Errorf("consumed %v, want %v", r.consumed, tt.consumed)
				}
				if r.emitErrs != tt.emitErrs {
					t.Errorf("%d emits failed, want %d", r.emitErrs, tt.emitErrs)
				}
				for i, a := range r.ahead {
					if a > 1 {
						t.Errorf("item %d begun while %d was consumed", i+a, i)
					}
				}
			})
		})
	}
}

// TestStreamStubbornProducer: a producer that ignores emit's errors and
// keeps emitting, even after Stream returned, is never blocked.
func TestStreamStubbornProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := make(chan func(int) error, 1)
		produce := func(ctx context.Context, emit func(int) error) error {
			for i := range 100 {
				_ = emit(i)
			}
			late <- emit
			return nil
		}
		n := 0
		err := Stream(t.Context(), produce, func(ctx context.Context, i int) error {
			n++
			return errStop
		})
		if !errors.Is(err, errStop) || n != 1 {
			t.Fatalf("error %v after %d items, want %v after 1", err, n, errStop)
		}
		if err := (<-late)(100); !errors.Is(err, context.Canceled) {
			t.Fatalf("emit after Stream returned: %v, want context.Canceled", err)
		}
	})
}
