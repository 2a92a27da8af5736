package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/cache"
)

// remoteFunc is a Remote of one function.
type remoteFunc func(ctx context.Context, r RemoteRequest) ([]byte, error)

func (f remoteFunc) Render(ctx context.Context, r RemoteRequest) ([]byte, error) { return f(ctx, r) }

// storeEngine opens the demo voices of dir with a phrase cache of its own
// and remote as its render nodes.
func storeEngine(t *testing.T, dir string, remote Remote) (*Engine, *cache.Store) {
	t.Helper()
	store, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: "a", Store: store, Remote: remote})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	return vs, store
}

type spoken struct {
	samples          []int16
	cached, rendered []bool
}

func speakAll(t *testing.T, vs *Engine, text string) spoken {
	t.Helper()
	var s spoken
	err := vs.Speak(context.Background(), Request{Text: text}, func(c Chunk) error {
		s.samples = append(s.samples, c.PCM.Samples...)
		s.cached, s.rendered = append(s.cached, c.Cached), append(s.rendered, c.Rendered)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A remote node asks a render node for each miss: the audio is the
// render node's, bit for bit, kept in the remote's phrase cache (the next
// time is a hit there), and made once; the render node answers a second
// asker from its cache.
func TestRemoteRendersMisses(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	server, serverStore := storeEngine(t, dir, nil)
	var asked []RemoteRequest
	client, _ := storeEngine(t, dir, remoteFunc(func(ctx context.Context, r RemoteRequest) ([]byte, error) {
		asked = append(asked, r)
		_, record, err := server.RenderPhrase(ctx, r)
		return record, err
	}))
	text := "The washing is done. Please empty it."
	first := speakAll(t, client, text)
	if !slices.Equal(first.rendered, []bool{true, true}) || slices.Contains(first.cached, true) {
		t.Fatalf("first: rendered %v cached %v, want both rendered", first.rendered, first.cached)
	}
	if len(asked) != 2 || asked[0].Text != "The washing is done." || asked[0].Key == (cache.PhraseKey{}) || asked[0].Voice != "a" {
		t.Fatalf("asked %+v", asked)
	}
	if n := serverStore.Stats().Entries; n != 2 {
		t.Errorf("the render node keeps %d phrases, want 2", n)
	}
	again := speakAll(t, client, text)
	if !slices.Equal(again.cached, []bool{true, true}) || len(asked) != 2 {
		t.Errorf("again: cached %v, %d asks: want hits in the remote's own cache", again.cached, len(asked))
	}
	local, _ := storeEngine(t, dir, nil)
	if own := speakAll(t, local, text); !slices.Equal(own.samples, first.samples) {
		t.Error("the rendered audio differs from what this node synthesizes itself")
	}
	// A second asker: the render node answers from its cache.
	entries := serverStore.Stats().Entries
	other, _ := storeEngine(t, dir, remoteFunc(func(ctx context.Context, r RemoteRequest) ([]byte, error) {
		_, record, err := server.RenderPhrase(ctx, r)
		return record, err
	}))
	speakAll(t, other, text)
	if n := serverStore.Stats().Entries; n != entries {
		t.Errorf("the render node made %d new phrases for a second asker", n-entries)
	}
}

// No answer, or a damaged one, is a miss: the sentence is synthesized
// here, and stored as usual.
func TestRemoteFailureSynthesizesHere(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	for name, remote := range map[string]Remote{
		"no render node": remoteFunc(func(context.Context, RemoteRequest) ([]byte, error) { return nil, errors.New("timed out") }),
		"damaged answer": remoteFunc(func(context.Context, RemoteRequest) ([]byte, error) { return []byte("not a phrase record"), nil }),
	} {
		t.Run(name, func(t *testing.T) {
			vs, store := storeEngine(t, dir, remote)
			s := speakAll(t, vs, "Hello there.")
			if len(s.samples) == 0 || s.rendered[0] || s.cached[0] {
				t.Fatalf("rendered %v cached %v, %d samples: want synthesized here", s.rendered, s.cached, len(s.samples))
			}
			if store.Stats().Entries != 1 {
				t.Error("the synthesized sentence was not cached")
			}
		})
	}
}

// A render node whose copy of the voice differs (another key) refuses.
func TestRenderPhraseKeyMismatch(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	server, _ := storeEngine(t, dir, nil)
	_, _, err := server.RenderPhrase(context.Background(), RemoteRequest{Voice: "a", Rate: 1, Text: "Hello.", Normalized: true, Key: cache.PhraseKey{1}})
	if !errors.Is(err, ErrRemoteKey) {
		t.Errorf("err %v, want ErrRemoteKey", err)
	}
}

// A group announcement's leader is asked for a sentence it is making for
// its own request: the asker shares that synthesis (the leader stores
// the sentence once, after playing it), and a member that names no
// RenderBy, or whose leader does not answer, makes its own.
func TestRenderPhraseSharesTheLeadersSynthesis(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	leader, leaderStore := storeEngine(t, dir, nil)
	text := "The washing is done. Please empty it."

	// The leader speaks; its emit of the first sentence waits, so that
	// sentence is made but not stored yet.
	first := make(chan Chunk)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- leader.Speak(context.Background(), Request{Text: text}, func(c Chunk) error {
			if c.Index == 0 {
				first <- c
				<-release
			}
			return nil
		})
	}()
	c := <-first
	var asked []RemoteRequest
	var failing bool
	member, _ := storeEngine(t, dir, nil)
	member.remote = remoteFunc(func(ctx context.Context, r RemoteRequest) ([]byte, error) {
		asked = append(asked, r)
		if failing {
			return nil, errors.New("the leader is gone")
		}
		_, record, err := leader.RenderPhrase(ctx, r)
		return record, err
	})
	member.remoteRenderBy = true

	// No RenderBy: the member is not asked to fetch.
	var got []Chunk
	speak := func(renderBy, text string) {
		t.Helper()
		got = got[:0]
		if err := member.Speak(context.Background(), Request{Text: text, RenderBy: renderBy}, func(c Chunk) error {
			got = append(got, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	speak("", "Another text.")
	if len(asked) != 0 || got[0].Rendered {
		t.Fatalf("asked %v for a request without RenderBy", asked)
	}

	// The first sentence, asked of the leader while it holds it: the
	// leader's own synthesis, not a second one (which would be stored).
	speak("leader", text)
	if len(asked) != 2 || asked[0].Node != "leader" || !got[0].Rendered || !got[1].Rendered {
		t.Fatalf("asked %+v, chunks rendered %v %v: want both sentences from the leader", asked, got[0].Rendered, got[1].Rendered)
	}
	if !slices.Equal(got[0].PCM.Samples, c.PCM.Samples) {
		t.Error("the member's first sentence is not the leader's audio")
	}
	// Only the second sentence, which RenderPhrase made, is stored yet: a
	// synthesis of the first of its own would have been stored too.
	if n := leaderStore.Stats().Entries; n != 1 {
		t.Errorf("while the leader holds its first sentence it stored %d phrases, want 1 (the second)", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The leader made each sentence once: its own Speak stored the first
	// after playing it; the second it made for whichever came first.
	if n := leaderStore.Stats().Entries; n != 2 {
		t.Errorf("the leader stored %d phrases, want 2", n)
	}

	// A leader that does not answer is asked once per request.
	failing, asked = true, nil
	speak("leader", "One more. And another. And a third.")
	if len(asked) != 1 || got[0].Rendered || got[1].Rendered {
		t.Errorf("asked %d times of a silent leader, want once (then made here)", len(asked))
	}
}
