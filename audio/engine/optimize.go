package engine

import (
	"errors"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// optimizer runs the background builds of Options.OptimizeInBackground:
// one goroutine takes voice names off a queue, in order, one at a time
// (two builds at once would hold two extra copies of a model), each name
// queued at most once until its build starts. Its methods do nothing on a
// nil *optimizer, the engine's when the option is off.
type optimizer struct {
	job  func(name string) error
	done func(name string, err error)

	mu     sync.Mutex
	queue  []string
	queued map[string]bool
	wake   chan struct{} // one slot: a name was queued
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// startOptimizer starts the goroutine that runs job for every queued name
// and then done with its error; close stops it.
func startOptimizer(job func(name string) error, done func(name string, err error)) *optimizer {
	o := &optimizer{job: job, done: done, queued: map[string]bool{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	o.wg.Add(1)
	go o.run()
	return o
}

// enqueue queues name unless it is queued already. A name whose build is
// running is queued again: its files may have changed since it started.
func (o *optimizer) enqueue(name string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if !o.queued[name] {
		o.queued[name] = true
		o.queue = append(o.queue, name)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *optimizer) next() (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.queue) == 0 {
		return "", false
	}
	name := o.queue[0]
	o.queue = o.queue[1:]
	delete(o.queued, name)
	return name, true
}

func (o *optimizer) run() {
	defer o.wg.Done()
	for {
		select {
		case <-o.stop:
			return
		case <-o.wake:
		}
		for name, ok := o.next(); ok; name, ok = o.next() {
			select {
			case <-o.stop:
				return
			default:
			}
			o.done(name, o.job(name))
		}
	}
}

// close drops what is queued and waits for the build that is running
// (ONNX Runtime's optimizing cannot be interrupted; it takes about as
// long as a voice's first load without this option).
func (o *optimizer) close() {
	if o == nil {
		return
	}
	o.once.Do(func() { close(o.stop) })
	o.wg.Wait()
}

// deferredOptimizing reports whether v is a Piper voice loaded without
// its optimized copy (voice.Piper.OptimizeDeferred).
func deferredOptimizing(v *loadedVoice) bool {
	m, ok := v.model.(piperModel)
	return ok && m.v.OptimizeDeferred()
}

// errOptimizedUnusable is optimizeVoice's error when the optimized copy
// was built but the voice still loads without it.
var errOptimizedUnusable = errors.New("the optimized copy was built but the voice loads without it")

// optimizeVoice builds the optimized copy of the Piper voice name, as a
// load of it asks for (voice.OptimizePiper, on one thread at a low
// priority), and switches the voice to it if it is loaded without.
func (vs *Engine) optimizeVoice(name string) error {
	if vs.optimizing != nil {
		vs.optimizing(name)
	}
	paths, err := vs.scan()
	if err != nil {
		return err
	}
	p, ok := paths[name]
	if !ok || p.kind != kindPiper {
		return nil // gone meanwhile, or replaced by a voice of another kind
	}
	precision, err := vs.choosePrecision(name, p.kind, p.path)
	if err != nil {
		return err
	}
	opts := *vs.opts
	opts.Precision = precision
	var so ort.SessionOptions
	if opts.Session != nil {
		so = *opts.Session
	}
	// The threads do not change the optimized graph (optimizedKeys),
	// only how much of the machine its build takes.
	so.IntraOpThreads = 1
	opts.Session = &so
	start := time.Now()
	if err := lowPriority(func() error { return voice.OptimizePiper(vs.rt, p.path, &opts) }); err != nil {
		return err
	}
	vs.log.Debug("voice optimized", "voice", name, "build_ms", float64(time.Since(start).Microseconds())/1000)
	return vs.switchOptimized(name, p.path)
}

// switchOptimized loads the voice name again, from its optimized copy,
// and puts it in place of the loaded voice (sessionLRU.Replace), if that
// one is loaded without its copy: requests that hold the old voice
// finish with it, the next ones get the new one, and the old one is
// closed by its last release. A voice that is not loaded is left for its
// next use, which loads the copy.
func (vs *Engine) switchOptimized(name, path string) error {
	var cur *loadedVoice
	vs.sessions.Each(func(key string, v *loadedVoice) {
		if key == name {
			cur = v
		}
	})
	if cur == nil || !deferredOptimizing(cur) {
		return nil
	}
	start := time.Now()
	next, err := vs.loadKind(name, kindPiper, path)
	if err != nil {
		return err
	}
	if deferredOptimizing(next) {
		next.model.close()
		return errOptimizedUnusable
	}
	if !vs.sessions.Replace(name, func(old *loadedVoice) bool { return old == cur }, next, next.info.SizeBytes) {
		// Let go or reloaded meanwhile: its next load takes the copy.
		return next.model.close()
	}
	vs.log.Info("voice switched to its optimized copy", "voice", name, "precision", next.precision,
		"load_ms", float64(time.Since(start).Microseconds())/1000)
	return nil
}

// optimizeDone reports a background build's outcome.
func (vs *Engine) optimizeDone(name string, err error) {
	if err != nil {
		vs.log.Warn("voice not optimized: it speaks as loaded, a little slower", "voice", name, "err", err)
	}
	if vs.optimized != nil {
		vs.optimized(name, err)
	}
}
