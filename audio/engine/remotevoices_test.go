package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
)

// A remote node without a voice's files speaks it from the render nodes'
// catalog: listed, checked, every sentence rendered there and cached
// here; with no render node answering, the request fails with reason
// render.
func TestRemoteVoiceWithoutFiles(t *testing.T) {
	serverDir, dir := t.TempDir(), t.TempDir()
	enginetest.WriteVoices(t, serverDir, "a", "b")
	enginetest.WriteVoices(t, dir, "a")
	server, _ := storeEngine(t, serverDir, nil)
	var failing bool
	asked := 0
	vs, _ := storeEngine(t, dir, remoteFunc(func(ctx context.Context, r RemoteRequest) ([]byte, error) {
		asked++
		if failing {
			return nil, errors.New("no render node answered")
		}
		_, record, err := server.RenderPhrase(ctx, r)
		return record, err
	}))
	vs.remoteVoices = func() []RemoteVoice { return []RemoteVoice{{Name: "b", Language: "en_US", SampleRate: 16000}} }

	if got := vs.Voices(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Voices = %v, want the installed a and the render nodes' b", got)
	}
	if err := vs.CheckVoice(context.Background(), "b"); err != nil {
		t.Errorf("CheckVoice(b): %v", err)
	}
	var kinds []string
	for _, v := range vs.Describe() {
		kinds = append(kinds, v.Name+":"+v.Kind)
	}
	if !slices.Contains(kinds, "b:"+KindRemote) {
		t.Errorf("Describe: %v, want b as a remote voice", kinds)
	}

	say := func(text string) ([]Chunk, error) {
		var out []Chunk
		err := vs.Speak(context.Background(), Request{Voice: "b", Text: text}, func(c Chunk) error {
			out = append(out, c)
			return nil
		})
		return out, err
	}
	text := "It is 7 pm. The door is open."
	first, err := say(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || !first[0].Rendered || !first[1].Rendered || first[0].Silence == 0 || first[1].Silence != 0 {
		t.Fatalf("chunks %+v: want two rendered sentences, a pause after the first", first)
	}
	// The render node's own voice says it the same way, read by the same
	// rules (the number read as words here, before it was asked).
	var own []int16
	if err := server.Speak(context.Background(), Request{Voice: "b", Text: text}, func(c Chunk) error {
		own = append(own, c.PCM.Samples...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := slices.Concat(first[0].PCM.Samples, first[1].PCM.Samples); !slices.Equal(got, own) {
		t.Error("the rendered audio differs from the render node's own")
	}
	again, err := say(text)
	if err != nil || !again[0].Cached || !again[1].Cached || asked != 2 {
		t.Fatalf("again: %v, cached %v %v, %d asks: want both from this node's cache", err, again[0].Cached, again[1].Cached, asked)
	}

	// Nobody answers: the request fails, with reason render.
	failing = true
	_, err = say("Something new.")
	var r interface{ Reason() string }
	if !errors.Is(err, ErrRemoteOnly) || !errors.As(err, &r) || r.Reason() != "render" {
		t.Errorf("Speak with no render node = %v, want ErrRemoteOnly (reason render)", err)
	}
	if err := vs.Speak(context.Background(), Request{Voice: "b", Speaker: "nobody", Text: "Hi."}, func(Chunk) error { return nil }); !errors.Is(err, voice.ErrUnknownSpeaker) {
		t.Errorf("an unknown speaker = %v, want ErrUnknownSpeaker", err)
	}
	// Installed voices are never spoken remotely.
	if _, ok := vs.remoteVoice("a"); ok {
		t.Error("the installed voice a taken for a remote one")
	}
}
