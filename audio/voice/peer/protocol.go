package peer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// ErrProtocol means a worker's line is not what the protocol allows; the
// message quotes it.
var ErrProtocol = errors.New("peer protocol")

// MaxLine bounds one line of the protocol, either way. Lines are a few
// hundred bytes; a longer one is a worker gone wrong.
const MaxLine = 64 << 10

// Ready is a worker's first line, once its model is loaded.
type Ready struct {
	Ready bool `json:"ready"`
	// Runtime names what the worker runs ("mynah", "sherpa-onnx 1.13.8").
	Runtime string `json:"runtime,omitempty"`
	// LoadMS is the time of the load call alone, measured by the worker.
	LoadMS     float64 `json:"load_ms"`
	SampleRate int     `json:"sample_rate"`
	// BaseRSSKB is the worker's resident memory just before the load: the
	// runtime's own footprint, without any model.
	BaseRSSKB int64 `json:"base_rss_kb"`
	// Error is set instead of everything else when the load failed.
	Error string `json:"error,omitempty"`
}

// Say asks a worker to synthesize one sentence.
type Say struct {
	Text string `json:"text"`
}

// Said is a worker's answer to a Say.
type Said struct {
	// MS is the time of the synthesis call alone, measured by the worker.
	MS float64 `json:"ms"`
	// Samples is how much audio came back, at the Ready line's rate.
	Samples int `json:"samples"`
	// Error is set instead of MS and Samples when synthesis failed.
	Error string `json:"error,omitempty"`
}

// decodeLine decodes one line, a JSON object, into v; every field is
// optional, unknown ones are refused so that a renamed field fails loudly.
func decodeLine(line []byte, v any) error {
	if len(line) > MaxLine {
		return fmt.Errorf("%w: line of %d bytes, limit %d", ErrProtocol, len(line), MaxLine)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
		return fmt.Errorf("%w: %q is not a JSON object", ErrProtocol, clip(line))
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %q: %v", ErrProtocol, clip(line), err)
	}
	if d.More() {
		return fmt.Errorf("%w: %q: more than one value on the line", ErrProtocol, clip(line))
	}
	return nil
}

// ParseReady parses and checks a worker's first line. A line that reports
// a failed load is an error that quotes the worker.
func ParseReady(line []byte) (Ready, error) {
	var r Ready
	if err := decodeLine(line, &r); err != nil {
		return Ready{}, err
	}
	switch {
	case r.Error != "":
		return Ready{}, fmt.Errorf("worker failed to load: %s", r.Error)
	case !r.Ready:
		return Ready{}, fmt.Errorf("%w: %q: first line must say ready", ErrProtocol, clip(line))
	case !validMS(r.LoadMS):
		return Ready{}, fmt.Errorf("%w: load_ms %v is not a duration", ErrProtocol, r.LoadMS)
	case r.SampleRate < 8000 || r.SampleRate > 192000:
		return Ready{}, fmt.Errorf("%w: sample_rate %d outside 8000..192000", ErrProtocol, r.SampleRate)
	case r.BaseRSSKB < 0:
		return Ready{}, fmt.Errorf("%w: base_rss_kb %d is negative", ErrProtocol, r.BaseRSSKB)
	}
	return r, nil
}

// ParseSaid parses and checks a worker's answer. An answer that reports a
// failed synthesis is an error that quotes the worker.
func ParseSaid(line []byte) (Said, error) {
	var s Said
	if err := decodeLine(line, &s); err != nil {
		return Said{}, err
	}
	switch {
	case s.Error != "":
		return Said{}, fmt.Errorf("worker failed to synthesize: %s", s.Error)
	case !validMS(s.MS):
		return Said{}, fmt.Errorf("%w: ms %v is not a duration", ErrProtocol, s.MS)
	case s.Samples < 0:
		return Said{}, fmt.Errorf("%w: samples %d is negative", ErrProtocol, s.Samples)
	}
	return s, nil
}

// ParseSay parses a request line; the text must not be empty.
func ParseSay(line []byte) (Say, error) {
	var s Say
	if err := decodeLine(line, &s); err != nil {
		return Say{}, err
	}
	if s.Text == "" {
		return Say{}, fmt.Errorf("%w: %q: no text", ErrProtocol, clip(line))
	}
	return s, nil
}

// validMS: an hour is far beyond any load or sentence here.
func validMS(ms float64) bool { return ms >= 0 && ms < 3.6e6 && !math.IsNaN(ms) }

func clip(line []byte) string {
	if len(line) > 120 {
		return string(line[:120]) + "…"
	}
	return string(line)
}

// WriteLine writes v as one JSON line.
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("write line: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write line: %w", err)
	}
	return nil
}

// Serve is a worker's loop: it answers every Say line read from r with a
// Said line on w, timing say alone, until r ends. A failed synthesis is
// answered with its error and the loop goes on; a line that is not a Say
// ends it with an error.
func Serve(r io.Reader, w io.Writer, say func(text string) (samples int, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	for sc.Scan() {
		req, err := ParseSay(sc.Bytes())
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		start := time.Now()
		n, err := say(req.Text)
		took := time.Since(start)
		ans := Said{MS: float64(took.Nanoseconds()) / 1e6, Samples: n}
		if err != nil {
			ans = Said{Error: err.Error()}
		}
		if err := WriteLine(w, ans); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
