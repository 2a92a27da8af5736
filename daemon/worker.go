package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// job is the request being played.
type job struct {
	req   Request
	voice string
	ctx   context.Context
	// cancel cuts the job; cutReason says why. Both are used under
	// Daemon.mu, and cutReason is read by the worker after playing.
	cancel    context.CancelFunc
	cutReason string
}

// jobError is a failure with its event reason.
type jobError struct {
	reason string
	err    error
}

func (e *jobError) Error() string { return e.err.Error() }
func (e *jobError) Unwrap() error { return e.err }

// progress is what playing a job achieved so far.
type progress struct {
	sentences  int
	cached     int       // sentences that came from the engine's phrase cache
	rendered   int       // sentences a render node made
	startedAt  time.Time // when the sink accepted the first audio; zero = not yet
	rate, chns int       // format of the last sentence, for its silence
	detail     []SentenceDetail
	// placed is how a timed request's first audio was placed against
	// its play_at (nil: not timed, or not placed yet); skip is how much
	// of the audio's head is still to be left out for it.
	placed  *audio.Placement
	playAt  time.Time
	skip    time.Duration
	skipped time.Duration // the skip asked for at the placement
}

// timing fills e's play_at fields from p.
func (p *progress) timing(e *Event) {
	if p.placed == nil {
		return
	}
	e.PlayAt = ptr(toUnixMillis(p.playAt))
	e.LateMS = millis(p.placed.Late)
	e.Clock = p.placed.Clock
	if p.skipped > 0 {
		e.SkippedMS = millis(p.skipped)
	}
}

// worker plays one request at a time until ctx ends or the daemon closes.
func (d *Daemon) worker(ctx context.Context) {
	for {
		j := d.next(ctx)
		if j == nil {
			return
		}
		d.runJob(j)
	}
}

// next waits for the next request that has not expired and makes it the
// current job.
func (d *Daemon) next(ctx context.Context) *job {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return nil
		}
		r, ok, expired := d.queue.pop(d.now())
		for i := range expired {
			d.emitDropped(&expired[i], ReasonExpired)
		}
		if ok {
			jctx, cancel := context.WithCancel(ctx)
			j := &job{req: r, voice: r.Voice, ctx: jctx, cancel: cancel}
			if j.voice == "" {
				j.voice = d.voice
			}
			d.current = j
			d.mu.Unlock()
			d.markState()
			return j
		}
		d.mu.Unlock()
		if len(expired) > 0 {
			d.markState()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.work:
		}
	}
}

// runJob plays j and reports how it ended.
func (d *Daemon) runJob(j *job) {
	// A cut cancels j.ctx; Abort then runs on its own goroutine and makes
	// a Write blocked inside the sink return at once.
	aborted := make(chan struct{})
	stopAbort := context.AfterFunc(j.ctx, func() {
		defer close(aborted)
		if err := d.opts.Sink.Abort(); err != nil {
			d.log.Warn("abort audio", "id", j.req.ID, "err", err)
		}
	})
	p, err := d.play(j)
	if !stopAbort() {
		// The Abort must not land on the next job's audio.
		d.busy()
		<-aborted
		d.idle()
	}
	j.cancel()

	d.mu.Lock()
	reason := j.cutReason
	d.current = nil
	d.mu.Unlock()
	// After the counters below have moved, so the state shows them.
	defer d.markState()

	r := &j.req
	var first *float64
	if !p.startedAt.IsZero() {
		first = millis(p.startedAt.Sub(r.Received))
	}
	je := (*jobError)(nil)
	errors.As(err, &je)
	switch {
	case err == nil:
		d.stats.finished.Add(1)
		latency := d.now().Sub(r.Received)
		d.log.Info("spoken", "id", r.ID, "sentences", p.sentences, "latency", latency)
		e := Event{ID: r.ID, State: EventFinished, Owner: r.Owner, FirstAudioMS: first,
			LatencyMS: millis(latency), Sentences: &p.sentences, Cache: p.cacheResult(), SentenceDetail: p.detail}
		if p.rendered > 0 {
			e.Rendered = &p.rendered
		}
		p.timing(&e)
		d.finish(r, e)
	case reason == "" && je != nil && je.reason == ReasonLate:
		d.stats.dropped.Add(1)
		d.log.Info("request dropped: too late to start in step", "id", r.ID, "group", r.Group, "err", err)
		e := Event{ID: r.ID, State: EventDropped, Reason: ReasonLate, Error: err.Error(), Owner: r.Owner}
		p.timing(&e)
		d.finish(r, e)
	case reason != "":
		d.emitDropped(r, reason)
	default:
		reason := ReasonSynthesis
		if je != nil {
			reason = je.reason
		}
		d.failRequest(r, reason, err)
	}
}

// play speaks j: it streams the sentences to the sink, then drains it.
func (d *Daemon) play(j *job) (progress, error) {
	var p progress
	if err := d.stream(j, &p); err != nil {
		return p, err
	}
	d.busy()
	err := d.opts.Sink.Drain(j.ctx)
	d.idle()
	if err != nil {
		return p, &jobError{ReasonAudio, fmt.Errorf("drain audio: %w", err)}
	}
	return p, nil
}

// stream runs the engine and writes each sentence to the sink as it
// comes, through audio.Stream: while sentence n is written, the engine
// synthesizes n+1 and then waits in emit, so synthesis runs exactly one
// sentence ahead of playback and at most two sentences of PCM are alive.
// stream returns once the engine has returned, so that it cannot run
// into the next job; an engine that ignores its context shows up as
// unhealthy, since the worker is marked busy while it waits for it.
func (d *Daemon) stream(j *job, p *progress) error {
	speech := Speech{Voice: j.voice, Speaker: j.req.Speaker, Text: j.req.Text, Rate: j.req.Rate,
		NoCache: j.req.NoCache, NoNormalize: j.req.NoNormalize, Owner: j.req.Owner, Session: j.req.Session}
	speech.RenderBy, speech.RenderUntil = d.renderBy(j)
	speak := func(ctx context.Context, emit func(Chunk) error) error {
		if err := d.opts.Engine.Speak(ctx, speech, emit); err != nil {
			return &jobError{speakerReason(err), fmt.Errorf("synthesize: %w", err)}
		}
		return nil
	}
	// The chime plays while the first sentence is synthesized; a timed
	// request's plays at its play_at, placed with the first sentence.
	timed := d.timed(j)
	chime := d.startChime(j.ctx, j, timed)
	chimed := false
	waitChime := func() error {
		if chimed {
			return nil
		}
		chimed = true
		return <-chime
	}
	// Busy while waiting for the engine: for the next sentence, or for it
	// to return after a cut or an error.
	d.busy()
	defer d.idle()
	err := audio.Stream(j.ctx, speak, func(ctx context.Context, c Chunk) error {
		d.idle()
		defer d.busy()
		if err := waitChime(); err != nil {
			return err
		}
		if timed && p.placed == nil {
			if err := d.placeStart(j, c, p); err != nil {
				return err
			}
		}
		p.sentences++
		return d.writeChunk(j, c, p)
	})
	if cerr := waitChime(); err == nil {
		err = cerr
	}
	return err
}

// cacheResult sums up where a finished request's sentences came from.
func (p *progress) cacheResult() string {
	switch {
	case p.sentences == 0:
		return ""
	case p.cached == p.sentences:
		return CacheHit
	case p.cached == 0:
		return CacheMiss
	}
	return CachePartial
}

// writeChunk writes one sentence and the pause after it.
func (d *Daemon) writeChunk(j *job, c Chunk, p *progress) error {
	if c.Cached {
		p.cached++
	}
	if c.Rendered {
		p.rendered++
	}
	if len(c.PCM.Samples) > 0 {
		if err := c.PCM.Validate(); err != nil {
			return &jobError{ReasonSynthesis, fmt.Errorf("sentence %d: %w", c.Index, err)}
		}
		src := "" // not recorded beyond MaxSentenceDetail
		if len(p.detail) < MaxSentenceDetail {
			src = CacheMiss
			switch {
			case c.Cached:
				src = CacheHit
			case c.Rendered:
				src = CacheRendered
			}
		}
		if err := d.writePCM(j, c.PCM, true, p, src); err != nil {
			return err
		}
		p.rate, p.chns = c.PCM.Rate, c.PCM.Channels
	}
	if c.Silence <= 0 || p.rate == 0 {
		return nil
	}
	return d.writePCM(j, audio.Silence(p.rate, p.chns, min(c.Silence, maxSilence)), false, p, "")
}

// writePCM hands pcm to the sink in blocks of Options.WriteBlock, reading
// the volume again for each block so that volume/set is heard at once.
// speech marks audio that counts as the request's first audio and takes
// the volume; silence needs neither. A sentence's source (CacheHit or
// CacheMiss; "" for none) records its first audio in p.detail.
func (d *Daemon) writePCM(j *job, pcm audio.PCM, speech bool, p *progress, source string) error {
	if p.skip > 0 && len(pcm.Samples) > 0 {
		// A timed request that started late leaves out what would have
		// played by now.
		want := int(int64(p.skip) * int64(pcm.Rate) / int64(time.Second))
		n := min(pcm.Frames(), want)
		pcm.Samples = pcm.Samples[n*pcm.Channels:]
		p.skip -= time.Duration(int64(n) * int64(time.Second) / int64(pcm.Rate))
		if n == want {
			p.skip = 0 // what is left is under a frame
		}
	}
	frames := pcm.Frames()
	block := max(1, int(int64(pcm.Rate)*int64(d.opts.WriteBlock)/int64(time.Second)))
	for off := 0; off < frames; off += block {
		end := min(off+block, frames)
		part := audio.PCM{Rate: pcm.Rate, Channels: pcm.Channels, Samples: pcm.Samples[off*pcm.Channels : end*pcm.Channels]}
		if speech {
			vol := d.currentVolume()
			if j.req.Volume != nil {
				vol = *j.req.Volume
			}
			part = audio.ApplyVolume(part, vol)
		}
		d.busy()
		err := d.opts.Sink.Write(j.ctx, part)
		d.idle()
		if err != nil {
			return &jobError{ReasonAudio, fmt.Errorf("write audio: %w", err)}
		}
		if !speech || off > 0 {
			continue // only a sentence's first block marks its first audio
		}
		now := d.now()
		if source != "" {
			p.detail = append(p.detail, SentenceDetail{Cache: source, FirstAudioMS: millis(now.Sub(j.req.Received))})
		}
		if p.startedAt.IsZero() {
			p.startedAt = now
			d.stats.started.Add(1)
			e := Event{ID: j.req.ID, State: EventStarted, Owner: j.req.Owner, Group: j.req.Group,
				FirstAudioMS: millis(p.startedAt.Sub(j.req.Received))}
			p.timing(&e)
			d.emit(e)
		}
	}
	return nil
}

// timed reports whether j starts at an instant: it has a play_at, or is a
// group request (whose members agree on one).
func (d *Daemon) timed(j *job) bool { return !j.req.PlayAt.IsZero() || j.req.Group != "" }

// placeStart places a timed request's first audio, c's sentence or the
// chime before it, at the request's play_at (audio.Place): silence up to
// it, or, when the request is up to Options.MaxLate late, its head left
// out; later than that the request fails with reason late. The chime is
// then written, and c follows in writeChunk.
func (d *Daemon) placeStart(j *job, c Chunk, p *progress) error {
	pcm := c.PCM
	chime, hasChime := d.chimePCM(j)
	if hasChime {
		pcm = chime
	}
	if pcm.Rate == 0 {
		return nil // nothing to place: a sentence of silence alone
	}
	d.busy()
	at := d.playAt(j)
	pl, err := audio.Place(j.ctx, placeSink{d.opts.Sink}, at, pcm.Rate, max(1, pcm.Channels), d.opts.MaxLate)
	d.idle()
	p.placed, p.playAt, p.skip = &pl, at, 0
	if pl.Skip > 0 {
		p.skip = time.Duration(int64(pl.Skip) * int64(time.Second) / int64(pcm.Rate))
		p.skipped = p.skip
	}
	switch {
	case errors.Is(err, audio.ErrTooLate):
		return &jobError{ReasonLate, fmt.Errorf("play_at %s: %w", at.Format("15:04:05.000"), err)}
	case err != nil:
		return &jobError{ReasonAudio, fmt.Errorf("place audio at play_at: %w", err)}
	}
	if hasChime {
		vol := d.currentVolume()
		if j.req.Volume != nil {
			vol = *j.req.Volume
		}
		return d.writePCM(j, audio.ApplyVolume(chime, vol), false, p, "")
	}
	return nil
}

// placeSink lends the daemon's sink to audio.Place: an audio.Sink (whose
// Close Place never calls) with the sink's DAC clock when it has one.
type placeSink struct{ Sink }

func (placeSink) Close() error { return nil }

func (s placeSink) NextDAC() (time.Time, error) {
	if c, ok := s.Sink.(audio.DACClock); ok {
		return c.NextDAC()
	}
	return time.Time{}, audio.ErrNoDACClock
}
