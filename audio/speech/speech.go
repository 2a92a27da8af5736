// Package speech is the vocabulary between front ends (mynahd's MQTT
// daemon, mynah say) and the speech engine (audio/engine): what to say,
// and the sentences that come back. It is plain data, free of cgo, so
// that the daemon, which must build without cgo, shares these types with
// the engine instead of keeping copies.
package speech

import (
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// Request is what a front end asks a speech engine to say.
type Request struct {
	Voice   string // a name from the engine's Voices; "" is the default voice
	Speaker string // a Piper speaker, a style pack's voice, or a cloned speaker
	Text    string
	Rate    float64 // 0 means 1
	// NoCache neither reads nor writes the phrase cache for this request.
	NoCache bool
	// Owner is whose cloned speakers Speaker is looked up among (then the
	// shared ones).
	Owner string
	// Session groups the utterances of one conversation: an engine with
	// an autoregressive decoder continues from the previous one (such
	// audio is not cached).
	Session string
	// Continued says that more of the same utterance follows this text
	// (a Wyoming stream spoken as its sentences arrive): the last sentence
	// is followed by the voice's pause too, as every other one is, so that
	// the parts sound as the whole text would.
	Continued bool
	// NoNormalize speaks Text as written: numbers, units, times and
	// Markdown are not read into words first (text.Normalize), and the
	// phrase cache keeps such audio apart.
	NoNormalize bool
	// RenderBy names the node to ask first for each sentence not in the
	// phrase cache: a group announcement's leader, the member whose
	// play_at proposal the group took, which synthesizes it anyway
	// (engine.Options.RemoteRenderBy). Empty: nobody.
	RenderBy string
	// RenderUntil, when set, is when to stop waiting for RenderBy's first
	// sentence and make it here: a leader that proposed and went must not
	// make its members late (the daemon gives half the time to play_at).
	RenderUntil time.Time
	// LengthScale, NoiseScale and NoiseW override a Piper voice's
	// inference defaults when set (other kinds ignore them); the phrase
	// cache keys the values used.
	LengthScale, NoiseScale, NoiseW *float32
}

// Chunk is one synthesized sentence.
type Chunk struct {
	Index   int
	Last    bool
	PCM     audio.PCM
	Silence time.Duration // pause to play after PCM (none after the last, unless Request.Continued)
	Cached  bool          // PCM came from the phrase cache, not from synthesis
	// Rendered marks PCM a render node made (engine.Options.Remote),
	// stored in the phrase cache since.
	Rendered bool
	// Took is how long the engine worked on the sentence: the cache
	// lookup, and the synthesis on a miss.
	Took time.Duration
	// Unknown counts the phonemes the voice had no id for: they were
	// skipped (0 for a cached sentence).
	Unknown int
}

// Enrollment asks for a cloned speaker made from a reference recording.
type Enrollment struct {
	ID    string // the command's id, echoed in its events (mynahd)
	Owner string // "" = shared
	Name  string
	// Voice names the voice whose speaker encoder makes the embedding; ""
	// is the default voice if it can clone, else the first that can.
	Voice string
	Audio audio.PCM
}

// SpeakerInfo describes a cloned speaker (never its embedding); the JSON
// is the daemon's retained speaker lists.
type SpeakerInfo struct {
	Owner string `json:"owner,omitempty"`
	Name  string `json:"name"`
	// Voice is the loaded voice whose encoder made it ("" when none is
	// loaded).
	Voice   string    `json:"voice,omitempty"`
	Created time.Time `json:"created"`
}

// VoiceChanges is what a reread of the installed voices found, by name.
type VoiceChanges struct {
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"` // files replaced: the next use loads the new ones
	Removed []string `json:"removed,omitempty"`
	// Rejected are new or changed voices whose config does not read: not
	// offered until they are fixed. Values say why.
	Rejected map[string]string `json:"rejected,omitempty"`
}

// Any reports whether anything changed.
func (c VoiceChanges) Any() bool {
	return len(c.Added)+len(c.Changed)+len(c.Removed)+len(c.Rejected) > 0
}
