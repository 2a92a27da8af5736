package peer_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/peer"
)

func TestParseReady(t *testing.T) {
	for _, tc := range []struct {
		line string
		want peer.Ready
		err  string // "" = no error; else a part of the message
	}{
		{`{"ready":true,"runtime":"sherpa-onnx 1.13.8","load_ms":93.9,"sample_rate":22050,"base_rss_kb":49852}`,
			peer.Ready{Ready: true, Runtime: "sherpa-onnx 1.13.8", LoadMS: 93.9, SampleRate: 22050, BaseRSSKB: 49852}, ""},
		{`{"ready":true,"load_ms":0,"sample_rate":16000}`, peer.Ready{Ready: true, SampleRate: 16000}, ""},
		{`{"error":"load model.onnx: Please check your config!"}`, peer.Ready{}, "failed to load: load model.onnx"},
		{`{"ready":false,"load_ms":1,"sample_rate":22050}`, peer.Ready{}, "must say ready"},
		{`{"ready":true,"load_ms":-1,"sample_rate":22050}`, peer.Ready{}, "load_ms -1"},
		{`{"ready":true,"load_ms":4e9,"sample_rate":22050}`, peer.Ready{}, "load_ms"},
		{`{"ready":true,"load_ms":1,"sample_rate":0}`, peer.Ready{}, "sample_rate 0"},
		{`{"ready":true,"load_ms":1,"sample_rate":22050,"base_rss_kb":-5}`, peer.Ready{}, "base_rss_kb -5"},
		{`{"ready":true,"load_ms":1,"sample_rate":22050,"loadms":3}`, peer.Ready{}, "unknown field"},
		{`{"ready":true,"load_ms":"1","sample_rate":22050}`, peer.Ready{}, "cannot unmarshal"},
		{`{"ready":true,"load_ms":1,"sample_rate":22050} {}`, peer.Ready{}, "more than one value"},
		{`Warning: espeak-ng-data not found`, peer.Ready{}, "not a JSON object"},
		{``, peer.Ready{}, "not a JSON object"},
		{`[1,2]`, peer.Ready{}, "not a JSON object"},
		{`{"ready":true,"load_ms":1,"sample_rate":22050,"runtime":"\x"}`, peer.Ready{}, "invalid character"},
		{`{"ready":true,"load_ms":1,"sample_rate":22050,"runtime":"` + strings.Repeat("x", peer.MaxLine) + `"}`, peer.Ready{}, "limit"},
	} {
		got, err := peer.ParseReady([]byte(tc.line))
		if !matches(err, tc.err) || got != tc.want {
			t.Errorf("ParseReady(%.80q) = %+v, %v; want %+v, error with %q", tc.line, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, peer.ErrProtocol) && !strings.Contains(tc.line, `"error"`) {
			t.Errorf("ParseReady(%.80q): %v is not ErrProtocol", tc.line, err)
		}
	}
}

func TestParseSaid(t *testing.T) {
	for _, tc := range []struct {
		line string
		want peer.Said
		err  string
	}{
		{`{"ms":14.64,"samples":63945}`, peer.Said{MS: 14.64, Samples: 63945}, ""},
		{`{"ms":0,"samples":0}`, peer.Said{}, ""},
		{`{"error":"cannot say it"}`, peer.Said{}, "failed to synthesize: cannot say it"},
		{`{"ms":-0.5,"samples":10}`, peer.Said{}, "ms -0.5"},
		{`{"ms":1,"samples":-10}`, peer.Said{}, "samples -10"},
		{`{"ms":1,"samples":1.5}`, peer.Said{}, "cannot unmarshal"},
		{`{"ms":1,"samples":10,"sample":3}`, peer.Said{}, "unknown field"},
		{`{"ms":1e999,"samples":10}`, peer.Said{}, "cannot unmarshal"},
		{`{"ms":1,`, peer.Said{}, "unexpected EOF"},
		{`null`, peer.Said{}, "not a JSON object"},
		{` {"ms":2,"samples":3} `, peer.Said{MS: 2, Samples: 3}, ""},
	} {
		got, err := peer.ParseSaid([]byte(tc.line))
		if !matches(err, tc.err) || got != tc.want {
			t.Errorf("ParseSaid(%q) = %+v, %v; want %+v, error with %q", tc.line, got, err, tc.want, tc.err)
		}
	}
}

func TestParseSay(t *testing.T) {
	for _, tc := range []struct {
		line, want, err string
	}{
		{`{"text":"Someone is at the front door."}`, "Someone is at the front door.", ""},
		{`{"text":"Grüße, \"Welt\"\n"}`, "Grüße, \"Welt\"\n", ""},
		{`{"text":""}`, "", "no text"},
		{`{}`, "", "no text"},
		{`{"text":1}`, "", "cannot unmarshal"},
		{`{"text":"a","voice":"b"}`, "", "unknown field"},
		{`text`, "", "not a JSON object"},
		{`{"text":"a"`, "", "unexpected EOF"},
	} {
		got, err := peer.ParseSay([]byte(tc.line))
		if !matches(err, tc.err) || got.Text != tc.want {
			t.Errorf("ParseSay(%q) = %q, %v; want %q, error with %q", tc.line, got.Text, err, tc.want, tc.err)
		}
	}
}

// matches reports whether err is nil when want is "", else whether its
// message contains want.
func matches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}

func TestServe(t *testing.T) {
	in := strings.NewReader(`{"text":"Hello there."}` + "\n" + `{"text":"fail"}` + "\n" + `{"text":"Bye."}` + "\n")
	var out bytes.Buffer
	var said []string
	err := peer.Serve(in, &out, func(text string) (int, error) {
		said = append(said, text)
		if text == "fail" {
			return 0, errors.New("no voice for that")
		}
		return 10 * len(text), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hello there.", "fail", "Bye."}; fmt.Sprint(said) != fmt.Sprint(want) {
		t.Errorf("said %q, want %q", said, want)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d answers, want 3:\n%s", len(lines), out.String())
	}
	for i, want := range []struct {
		samples int
		err     string
	}{{120, ""}, {0, "no voice for that"}, {40, ""}} {
		s, err := peer.ParseSaid([]byte(lines[i]))
		if !matches(err, want.err) || s.Samples != want.samples {
			t.Errorf("answer %d %s: %+v, %v; want %d samples, error with %q", i+1, lines[i], s, err, want.samples, want.err)
		}
	}
}

func TestServeRefusesGarbage(t *testing.T) {
	in := strings.NewReader(`{"text":"Hello."}` + "\nnot json\n" + `{"text":"never said"}` + "\n")
	var out bytes.Buffer
	n := 0
	err := peer.Serve(in, &out, func(string) (int, error) { n++; return 1, nil })
	if !errors.Is(err, peer.ErrProtocol) || n != 1 {
		t.Errorf("Serve: %v after %d sentences, want ErrProtocol after 1", err, n)
	}
}

func FuzzParseLines(f *testing.F) {
	for _, s := range []string{
		`{"ready":true,"runtime":"x","load_ms":1.5,"sample_rate":22050,"base_rss_kb":1}`,
		`{"ms":14.64,"samples":63945}`, `{"error":"x"}`, `{"text":"Hello."}`, `null`, `{"ms":1e308}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if r, err := peer.ParseReady(line); err == nil && (!r.Ready || r.SampleRate < 8000 || r.LoadMS < 0) {
			t.Errorf("ParseReady accepted %+v", r)
		}
		if s, err := peer.ParseSaid(line); err == nil && (s.MS < 0 || s.Samples < 0) {
			t.Errorf("ParseSaid accepted %+v", s)
		}
		if s, err := peer.ParseSay(line); err == nil && s.Text == "" {
			t.Error("ParseSay accepted an empty text")
		}
	})
}
