package wyoming

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/speech"
)

// Event types this server reads and writes.
const (
	typeDescribe          = "describe"
	typeInfo              = "info"
	typeSynthesize        = "synthesize"
	typeSynthesizeStart   = "synthesize-start"
	typeSynthesizeChunk   = "synthesize-chunk"
	typeSynthesizeStop    = "synthesize-stop"
	typeSynthesizeStopped = "synthesize-stopped"
	typeAudioStart        = "audio-start"
	typeAudioChunk        = "audio-chunk"
	typeAudioStop         = "audio-stop"
	typeError             = "error"
	typePing              = "ping"
	typePong              = "pong"
)

// Codes of the error events this server sends. After an error event the
// server closes the connection: Home Assistant reads audio until
// audio-stop or synthesize-stopped and ignores error events, so only the
// closed connection tells it the request failed.
const (
	CodeBusy         = "busy"             // over MaxConnections
	CodeBadEvent     = "bad-event"        // a frame ReadEvent refused, or data of the wrong shape
	CodeTimeout      = "timeout"          // no complete event within ReadTimeout
	CodeUnexpected   = "unexpected-event" // e.g. synthesize-chunk outside a stream
	CodeUnknownVoice = "unknown-voice"    // no voice by that name, or none for that language
	CodeEmptyText    = "empty-text"       // a synthesize with nothing but white space
	CodeTextTooLong  = "text-too-long"    // over MaxTextRunes
	CodeSynthesis    = "synthesis-failed" // the engine failed
	// CodeVoiceDownloading: the voice, listed as not installed, is still
	// being installed; CodeInstallFailed: installing it failed.
	CodeVoiceDownloading = "voice-downloading"
	CodeInstallFailed    = "install-failed"
)

// fallbackRate is the audio-start rate of a one-shot answer that has no
// audio at all (the engine found nothing to say).
const fallbackRate = 22050

// requestError is a failure the client hears about as an error event.
type requestError struct {
	code string
	err  error
}

func (e *requestError) Error() string { return e.code + ": " + e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

func refuse(code, format string, args ...any) error {
	return &requestError{code: code, err: fmt.Errorf(format, args...)}
}

func errorEvent(code, text string) (Event, error) {
	data, err := json.Marshal(struct {
		Text string `json:"text"`
		Code string `json:"code"`
	}{text, code})
	return Event{Type: typeError, Data: data}, err
}

// Shapes of the data of the events read.
type (
	voiceData struct {
		Name     string `json:"name"`
		Language string `json:"language"`
		Speaker  string `json:"speaker"`
	}
	synthesizeData struct {
		Text  string     `json:"text"`
		Voice *voiceData `json:"voice"`
	}
	textData struct {
		Text string `json:"text"`
	}
	audioFormat struct {
		Rate      int   `json:"rate"`
		Width     int   `json:"width"`
		Channels  int   `json:"channels"`
		Timestamp int64 `json:"timestamp"`
	}
)

// conn is one client connection, served on one goroutine; its events go
// out through its send queue's writer goroutine.
type conn struct {
	s   *Server
	c   net.Conn
	r   *bufio.Reader
	q   *sendQueue
	ctx context.Context
	log *slog.Logger

	// served: the connection holds a MaxConnections slot (a request in
	// progress); slot: its Speak call holds a MaxParallel one.
	served, slot bool
	// evicted: closed by the server to make room for a newer idle
	// connection (MaxIdle).
	evicted atomic.Bool

	// The stream being received, between synthesize-start and -stop.
	streaming bool
	req       speech.Request // voice and speaker of the stream
	pending   string         // streamed text not yet spoken
	runes     int            // streamed text so far

	// Audio of the current request: its format, fixed by the first
	// sentence (HA writes the WAV header from the first audio-start), the
	// frames sent, and the pause owed after the last sentence, sent only
	// if another follows.
	rate, channels int
	frames         int64
	silence        time.Duration
}

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	cn := &conn{s: s, c: c, r: bufio.NewReader(c), ctx: ctx, log: s.log.With(logKeyRemote, c.RemoteAddr().String())}
	cn.q = newSendQueue(c, s.o.SendBuffer, s.o.WriteTimeout, func(n int64) { s.st.bytesOut.Add(uint64(n)) })
	defer func() {
		cn.release()
		// What is queued is written before the connection closes: a
		// client may half-close once it has sent its request. The
		// writer's deadline bounds the wait, and Serve closes the
		// connection under it when ctx ends.
		cn.q.close()
		<-cn.q.done
	}()
	cn.log.Debug("connected")
	for {
		// Between requests a connection holds no slot: it is idle, one of
		// at most MaxIdle, and must send its next request within
		// IdleTimeout. Inside a stream, its text may take ReadTimeout.
		idle := !cn.streaming
		timeout := s.o.ReadTimeout
		if idle {
			s.enterIdle(cn)
			timeout = s.o.IdleTimeout
		}
		c.SetReadDeadline(time.Now().Add(timeout))
		ev, err := ReadEvent(cn.r, s.o.Limits)
		if idle {
			s.leaveIdle(cn)
		}
		arrived := time.Now()
		if err != nil {
			cn.readFailed(ctx, err, idle)
			return
		}
		if err := cn.admit(ev); err != nil {
			cn.fail(err)
			return
		}
		err = cn.handle(ctx, ev, arrived)
		if err != nil || !cn.streaming {
			cn.release()
		}
		if err != nil {
			if ctx.Err() == nil {
				cn.fail(err)
			}
			return
		}
	}
}

// readFailed ends a connection whose next event did not come.
func (cn *conn) readFailed(ctx context.Context, err error, idle bool) {
	s := cn.s
	switch {
	case ctx.Err() != nil, errors.Is(err, io.EOF):
		cn.log.Debug("disconnected")
	case cn.evicted.Load():
		cn.log.Debug("idle connection closed for a newer one", "max_idle", s.o.MaxIdle)
	case errors.Is(err, os.ErrDeadlineExceeded) && idle:
		s.st.idleClosed.Add(1)
		cn.fail(refuse(CodeTimeout, "no request within %v", s.o.IdleTimeout))
	case errors.Is(err, os.ErrDeadlineExceeded):
		cn.fail(refuse(CodeTimeout, "no complete event within %v", s.o.ReadTimeout))
	case errors.Is(err, net.ErrClosed), errors.Is(err, ErrTruncated):
		s.st.errors.Add(1)
		cn.log.Debug("connection lost", logKeyErr, err)
	default:
		var ne net.Error
		if errors.As(err, &ne) || !isFrameError(err) {
			s.st.errors.Add(1)
			cn.log.Debug("read failed", logKeyErr, err)
			return
		}
		cn.fail(&requestError{code: CodeBadEvent, err: err})
	}
}

// admit gives a request its MaxConnections slot: a synthesize, or a
// stream from its synthesize-start to its synthesize-stop. Other events
// (describe, ping) need none. Over the limit the request is refused as
// busy.
func (cn *conn) admit(ev Event) error {
	if cn.served || (ev.Type != typeSynthesize && ev.Type != typeSynthesizeStart) {
		return nil
	}
	select {
	case cn.s.conns <- struct{}{}:
		cn.served = true
		return nil
	default:
		cn.s.st.rejected.Add(1)
		return refuse(CodeBusy, "busy: %d requests in progress already, try again", cn.s.o.MaxConnections)
	}
}

// release gives back the connection's MaxConnections slot, if it holds it.
func (cn *conn) release() {
	if cn.served {
		<-cn.s.conns
		cn.served = false
	}
}

// takeSlot waits for a MaxParallel slot; giveSlot gives it back.
func (cn *conn) takeSlot(ctx context.Context) error {
	if cap(cn.s.speak) == 0 { // NoParallelLimit: the engine schedules
		return nil
	}
	select {
	case cn.s.speak <- struct{}{}:
		cn.slot = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (cn *conn) giveSlot() {
	if cn.slot {
		<-cn.s.speak
		cn.slot = false
	}
}

func isFrameError(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrHeaderTooLong) ||
		errors.Is(err, ErrDataTooLarge) || errors.Is(err, ErrPayloadTooLarge)
}

// fail reports err to the client as an error event, if it is one the
// client should hear about; the caller then closes the connection.
func (cn *conn) fail(err error) {
	cn.s.st.errors.Add(1)
	var re *requestError
	if !errors.As(err, &re) {
		cn.log.Debug("connection dropped", logKeyErr, err)
		return
	}
	cn.log.Warn("request failed", "code", re.code, logKeyErr, re.err)
	ev, mErr := errorEvent(re.code, re.err.Error())
	if mErr == nil && cn.write(ev) == nil && cn.q.flush(cn.ctx) == nil {
		cn.linger()
	}
}

// lingerTimeout bounds how long a failed connection is drained.
const lingerTimeout = time.Second

// linger half-closes the connection and reads what the client still sends
// until it closes too (or lingerTimeout, or 256 KiB). Closing a socket
// with unread input makes the kernel send a reset, which can destroy the
// error event before the client has read it.
//
// A lingering connection counts as idle (MaxIdle), so that a flood of
// refused clients cannot pile up.
func (cn *conn) linger() {
	hc, ok := cn.c.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return
	}
	cn.s.enterIdle(cn)
	defer cn.s.leaveIdle(cn)
	cn.c.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, io.LimitReader(cn.r, 256<<10))
}

// handle answers one event; arrived is when it was read.
func (cn *conn) handle(ctx context.Context, ev Event, arrived time.Time) error {
	switch ev.Type {
	case typeDescribe:
		cn.s.st.describes.Add(1)
		info, err := infoEvent(cn.s.o.Version, cn.s.voiceList(true))
		if err != nil {
			return fmt.Errorf("info: %w", err)
		}
		return cn.write(info)

	case typePing:
		var d textData
		if err := decode(ev, &d); err != nil {
			return err
		}
		data, _ := json.Marshal(d)
		return cn.write(Event{Type: typePong, Data: data})

	case typeSynthesize:
		if cn.streaming {
			// Home Assistant sends the whole text once more, for servers
			// that know no streaming, before synthesize-stop. Speaking it
			// would say everything twice.
			cn.log.Debug("compatibility synthesize ignored inside a stream")
			return nil
		}
		var d synthesizeData
		if err := decode(ev, &d); err != nil {
			return err
		}
		if strings.TrimSpace(d.Text) == "" {
			return refuse(CodeEmptyText, "nothing to say")
		}
		if n := utf8.RuneCountInString(d.Text); n > cn.s.o.MaxTextRunes {
			return refuse(CodeTextTooLong, "text of %d characters is over the limit of %d", n, cn.s.o.MaxTextRunes)
		}
		req, err := cn.voice(ctx, d.Voice)
		if err != nil {
			return err
		}
		cn.s.st.requests.Add(1)
		cn.resetAudio()
		req.Text = d.Text
		audioSent, err := cn.speak(ctx, req, arrived)
		if err != nil {
			return err
		}
		if !audioSent {
			// A valid, empty WAV for HA, whose one-shot reader makes its
			// WAV from the first audio-chunk.
			if err := cn.writeFormat(typeAudioStart, fallbackRate, 1); err != nil {
				return err
			}
			if err := cn.writeAudio(audio.PCM{Rate: fallbackRate, Channels: 1}); err != nil {
				return err
			}
			return cn.writeFormat(typeAudioStop, fallbackRate, 1)
		}
		return nil

	case typeSynthesizeStart:
		if cn.streaming {
			return refuse(CodeUnexpected, "synthesize-start inside a stream")
		}
		var d synthesizeData
		if err := decode(ev, &d); err != nil {
			return err
		}
		req, err := cn.voice(ctx, d.Voice)
		if err != nil {
			return err
		}
		cn.s.st.requests.Add(1)
		cn.streaming, cn.req, cn.pending, cn.runes = true, req, "", 0
		cn.resetAudio()
		return nil

	case typeSynthesizeChunk:
		if !cn.streaming {
			return refuse(CodeUnexpected, "synthesize-chunk outside a stream (send synthesize-start first)")
		}
		var d textData
		if err := decode(ev, &d); err != nil {
			return err
		}
		cn.runes += utf8.RuneCountInString(d.Text)
		if cn.runes > cn.s.o.MaxTextRunes {
			return refuse(CodeTextTooLong, "streamed text is over the limit of %d characters", cn.s.o.MaxTextRunes)
		}
		done, rest := cn.s.o.Engine.CutSentences(cn.pending + d.Text)
		cn.pending = rest
		return cn.speakStreamed(ctx, done, arrived, true)

	case typeSynthesizeStop:
		if !cn.streaming {
			return refuse(CodeUnexpected, "synthesize-stop outside a stream")
		}
		rest := cn.pending
		cn.streaming, cn.pending = false, ""
		if err := cn.speakStreamed(ctx, rest, arrived, false); err != nil {
			return err
		}
		return cn.write(Event{Type: typeSynthesizeStopped})

	default:
		// Other events (audio from a satellite, transcribe, ...) are not
		// for a TTS server; like the Python servers, carry on.
		cn.log.Debug("event ignored", logKeyEvent, ev.Type)
		return nil
	}
}

func decode(ev Event, v any) error {
	if len(ev.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return &requestError{code: CodeBadEvent, err: fmt.Errorf("%s data: %w", ev.Type, err)}
	}
	return nil
}

// voice resolves a request's voice: a name from info, or failing that a
// voice for a language (en_US and en-US match, en matches either): the
// default voice when it speaks that language, else the first installed
// one that does, else the first not installed. None is the engine's
// default voice. A voice not installed is installed first (install).
//
// It looks in the list an earlier request read if that is under
// voiceListTTL old (Server.voiceList): listing reads the voices
// directory and every voice's files, 60 µs of a 200 µs cache hit. A
// voice gone since fails where the engine loads it, as it would a moment
// after the check; one not found there, or to be installed, is looked
// for again in a list read now.
func (cn *conn) voice(ctx context.Context, v *voiceData) (speech.Request, error) {
	if v == nil || (v.Name == "" && v.Language == "") {
		return speech.Request{}, nil
	}
	vi, err := pickVoice(cn.s.voiceList(false), v)
	if vi == nil || vi.NotInstalled {
		vi, err = pickVoice(cn.s.voiceList(true), v)
	}
	if err != nil {
		return speech.Request{}, err
	}
	return speech.Request{Voice: vi.Name, Speaker: v.Speaker}, cn.install(ctx, *vi)
}

// pickVoice is voice's choice among voices; nil with an error when none
// fits.
func pickVoice(voices []VoiceInfo, v *voiceData) (*VoiceInfo, error) {
	if v.Name != "" {
		for i := range voices {
			if voices[i].Name == v.Name {
				return &voices[i], nil
			}
		}
		return nil, refuse(CodeUnknownVoice, "no voice %q (describe lists the voices)", v.Name)
	}
	var match, notInstalled *VoiceInfo
	for i := range voices {
		vi := &voices[i]
		if !slices.ContainsFunc(vi.Languages, func(l string) bool { return sameLanguage(l, v.Language) }) {
			continue
		}
		switch {
		case vi.Default && !vi.NotInstalled:
			return vi, nil
		case vi.NotInstalled && notInstalled == nil:
			notInstalled = vi
		case !vi.NotInstalled && match == nil:
			match = vi
		}
	}
	if match == nil {
		match = notInstalled
	}
	if match != nil {
		return match, nil
	}
	return nil, refuse(CodeUnknownVoice, "no voice for language %q", v.Language)
}

// install installs a voice info lists as not installed, before the
// request takes a synthesis slot: a download must not hold one.
func (cn *conn) install(ctx context.Context, vi VoiceInfo) error {
	in, ok := cn.s.o.Engine.(VoiceInstaller)
	if !vi.NotInstalled || !ok {
		return nil
	}
	cn.log.Info("installing voice", "voice", vi.Name)
	if err := in.InstallVoice(ctx, vi.Name); err != nil {
		if errors.Is(err, ErrVoiceDownloading) {
			return &requestError{code: CodeVoiceDownloading, err: err}
		}
		return &requestError{code: CodeInstallFailed, err: err}
	}
	return nil
}

func sameLanguage(have, want string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "_")) }
	have, want = norm(have), norm(want)
	return have == want || (!strings.Contains(want, "_") && strings.HasPrefix(have, want+"_"))
}

// speakStreamed speaks text of the stream, if it holds anything to say;
// more is what synthesize-stop has not ended yet, and gives the last
// sentence its pause. Each call is answered as wyoming-piper does:
// audio-start, audio-chunks, audio-stop, all in the stream's one format.
func (cn *conn) speakStreamed(ctx context.Context, say string, arrived time.Time, more bool) error {
	say = strings.TrimSpace(say)
	if say == "" {
		return nil
	}
	req := cn.req
	req.Text, req.Continued = say, more
	_, err := cn.speak(ctx, req, arrived)
	return err
}

func (cn *conn) resetAudio() { cn.rate, cn.channels, cn.frames, cn.silence = 0, 0, 0, 0 }

// speak runs one Speak call, holding a MaxParallel slot while it
// synthesizes, and sends its audio framed by audio-start and audio-stop
// (none if it had no audio). The slot is given back while the client is
// slow to read what was synthesized (conn.write), and taken again before
// the next sentence. arrived is when the request was read: its
// first_audio_ms counts the wait for a slot.
func (cn *conn) speak(ctx context.Context, req speech.Request, arrived time.Time) (audioSent bool, err error) {
	if err := cn.takeSlot(ctx); err != nil {
		return false, err
	}
	defer cn.giveSlot()

	start := time.Now()
	var (
		first           time.Duration // request arrived → first audio queued for the client
		sentences, hits int
	)
	var emitErr error // a client that went away is not a synthesis failure
	err = cn.s.o.Engine.Speak(ctx, req, func(ch speech.Chunk) error {
		sentences++
		if ch.Cached {
			hits++
			cn.s.st.cacheHits.Add(1)
		}
		pcm := ch.PCM
		if len(pcm.Samples) == 0 {
			cn.silence += ch.Silence
			return nil
		}
		if err := cn.sentence(pcm, &audioSent); err != nil {
			emitErr = err
			return err
		}
		if first == 0 {
			first = time.Since(arrived)
		}
		cn.silence = ch.Silence
		if !cn.slot {
			if err := cn.takeSlot(ctx); err != nil {
				emitErr = err
				return err
			}
		}
		return nil
	})
	if err == nil && emitErr == nil {
		cache := "miss"
		switch {
		case sentences > 0 && hits == sentences:
			cache = "hit"
		case hits > 0:
			cache = "partial"
		}
		cn.log.Info("spoken", "voice", req.Voice, "speaker", req.Speaker, "sentences", sentences, "cache", cache,
			"first_audio_ms", ms(first), "wait_ms", ms(start.Sub(arrived)), "ms", ms(time.Since(arrived)))
	}
	if emitErr != nil {
		return audioSent, emitErr
	}
	if err != nil {
		return audioSent, &requestError{code: CodeSynthesis, err: err}
	}
	if audioSent {
		return true, cn.writeFormat(typeAudioStop, cn.rate, cn.channels)
	}
	return false, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// sentence sends one sentence's audio, converted to the request's format,
// preceded by audio-start if it is the call's first and by the pause the
// previous sentence asked for.
func (cn *conn) sentence(pcm audio.PCM, started *bool) error {
	if err := pcm.Validate(); err != nil {
		return &requestError{code: CodeSynthesis, err: err}
	}
	if cn.rate == 0 {
		cn.rate, cn.channels = pcm.Rate, pcm.Channels
		cn.silence = 0 // nothing to pause after
	} else if pcm.Rate != cn.rate || pcm.Channels != cn.channels {
		// A later sentence in another voice or rate: resample, since HA
		// keeps the first audio-start's format for the whole WAV.
		var err error
		if pcm, err = audio.Convert(pcm, cn.rate, cn.channels); err != nil {
			return &requestError{code: CodeSynthesis, err: err}
		}
	}
	if !*started {
		if err := cn.writeFormat(typeAudioStart, cn.rate, cn.channels); err != nil {
			return err
		}
		*started = true
	}
	if cn.silence > 0 {
		if err := cn.writeAudio(audio.Silence(cn.rate, cn.channels, cn.silence)); err != nil {
			return err
		}
		cn.silence = 0
	}
	return cn.writeAudio(pcm)
}

func (cn *conn) timestamp() int64 {
	if cn.rate == 0 {
		return 0
	}
	return cn.frames * 1000 / int64(cn.rate)
}

func (cn *conn) writeFormat(typ string, rate, channels int) error {
	f := audioFormat{Rate: rate, Width: 2, Channels: channels, Timestamp: cn.timestamp()}
	var data []byte
	if typ == typeAudioStop {
		data, _ = json.Marshal(struct {
			Timestamp int64 `json:"timestamp"`
		}{f.Timestamp})
	} else {
		data, _ = json.Marshal(f)
	}
	return cn.write(Event{Type: typ, Data: data})
}

// writeAudio sends p as audio-chunk events of SamplesPerChunk frames, s16le.
// An empty p is sent as one empty chunk. A cache hit's whole answer is
// these, so they cost little: each chunk's header and format are framed
// into one buffer for the call (appendAudioChunkHeader; going through
// Event and JSON cost five allocations a chunk), and its payload is p's
// own memory (audio.S16LEView), which the engine never changes once it
// has handed it out (engine.Chunk).
func (cn *conn) writeAudio(p audio.PCM) error {
	step := cn.s.o.SamplesPerChunk * p.Channels
	chunks := max(1, (len(p.Samples)+step-1)/step)
	headers := make([]byte, 0, chunks*maxChunkHeader)
	for i := 0; i < len(p.Samples) || i == 0; i += step {
		part := p.Samples[i:min(i+step, len(p.Samples))]
		f := audioFormat{Rate: p.Rate, Width: 2, Channels: p.Channels, Timestamp: cn.timestamp()}
		start := len(headers)
		headers = appendAudioChunkHeader(headers, f, len(part))
		// The full slice expression keeps a header from reaching into the
		// next; should headers grow after all, earlier ones keep the array
		// they were framed in.
		frame := net.Buffers{headers[start:len(headers):len(headers)]}
		if len(part) > 0 {
			frame = append(frame, audio.S16LEView(part))
		}
		if err := cn.queue(frame); err != nil {
			return err
		}
		frames := int64(len(part) / p.Channels)
		cn.frames += frames
		cn.s.st.audioNanos.Add(frames * int64(time.Second) / int64(p.Rate))
		if len(p.Samples) == 0 {
			break
		}
	}
	return nil
}

// write queues ev for the client. While the queue is full the client is
// reading slowly: the request gives back its synthesis slot, so that
// other clients' requests go on, and waits for room. A client that reads
// nothing for WriteTimeout is dropped (sendQueue).
func (cn *conn) write(ev Event) error {
	frame, err := encodeEvent(ev)
	if err != nil {
		return err
	}
	return cn.queue(frame)
}

// queue is write for an encoded frame.
func (cn *conn) queue(frame net.Buffers) error {
	for {
		ok, err := cn.q.put(frame)
		if err != nil || ok {
			return err
		}
		if cn.slot {
			cn.giveSlot()
			cn.log.Debug("client reads slowly: synthesis slot given back until it catches up")
		}
		if err := cn.q.waitRoom(cn.ctx); err != nil {
			return err
		}
	}
}
