package peer

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// ErrSherpaContract means a Piper voice cannot be handed to sherpa-onnx as
// it is: sherpa feeds the model's inputs by position, not by name.
var ErrSherpaContract = errors.New("voice does not fit sherpa-onnx's piper loader")

// Files of an exported voice, in the directory ExportSherpa writes.
const (
	SherpaModelFile  = "model.onnx"
	SherpaTokensFile = "tokens.txt"
)

// SherpaMetadataVersion is the version metadata_props entry: sherpa-onnx
// reads it for MeloTTS models only, and its own Piper exports write 1.
const SherpaMetadataVersion = "1"

// SherpaVoice is a voice ExportSherpa wrote.
type SherpaVoice struct {
	Dir    string
	Model  string // Dir/model.onnx: the voice's model with sherpa's metadata
	Tokens string // Dir/tokens.txt
	Config *voice.PiperConfig
	// Skipped are the phoneme_id_map symbols tokens.txt cannot hold
	// (see SherpaTokens); English espeak-ng phonemes never need them.
	Skipped []string
}

// ExportSherpa writes the Piper voice at voicePath (a NAME.onnx or a
// directory holding one) into dir as sherpa-onnx's VITS loader reads it:
// a copy of the model whose metadata_props carry what Piper keeps in
// NAME.onnx.json (SherpaMetadata), and tokens.txt (SherpaTokens). The
// original is left as it is.
func ExportSherpa(voicePath, dir string) (*SherpaVoice, error) {
	modelPath, err := voice.FindPiper(voicePath)
	if err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	cfg, err := voice.ReadPiperConfig(modelPath + ".json")
	if err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	m, err := onnx.ReadFile(modelPath, nil)
	if err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	if err := checkSherpaInputs(m, cfg.NumSpeakers); err != nil {
		return nil, fmt.Errorf("export %s for sherpa: %w", modelPath, err)
	}
	SetMetadata(m, SherpaMetadata(cfg))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	v := &SherpaVoice{Dir: dir, Model: filepath.Join(dir, SherpaModelFile), Tokens: filepath.Join(dir, SherpaTokensFile), Config: cfg}
	if err := onnx.WriteFile(v.Model, m); err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	tokens, skipped := SherpaTokens(cfg.PhonemeIDMap)
	if err := os.WriteFile(v.Tokens, tokens, 0o644); err != nil {
		return nil, fmt.Errorf("export for sherpa: %w", err)
	}
	v.Skipped = skipped
	return v, nil
}

// SherpaMetadata is what sherpa-onnx's VITS loader reads from a Piper
// model's metadata_props: comment=piper picks Piper's phoneme ids (^, then
// each phoneme followed by _, then $), has_espeak=1 and voice its espeak-ng
// front end, add_blank=0 keeps it from inserting blanks of its own.
func SherpaMetadata(cfg *voice.PiperConfig) map[string]string {
	lang := cfg.Language.Code
	if lang == "" {
		lang = cfg.Espeak.Voice
	}
	return map[string]string{
		"model_type":  "vits",
		"comment":     "piper",
		"language":    lang,
		"voice":       cfg.Espeak.Voice,
		"has_espeak":  "1",
		"n_speakers":  strconv.Itoa(max(cfg.NumSpeakers, 1)),
		"sample_rate": strconv.Itoa(cfg.Audio.SampleRate),
		"add_blank":   "0",
		"version":     SherpaMetadataVersion,
	}
}

// SetMetadata sets the model's metadata_props entries named in kv,
// replacing entries of the same key and keeping the others; new entries
// are added in key order so that the same model and kv give the same bytes.
func SetMetadata(m *onnx.Model, kv map[string]string) {
	props := slices.DeleteFunc(m.Proto.GetMetadataProps(), func(p *onnxpb.StringStringEntryProto) bool {
		_, ok := kv[p.GetKey()]
		return ok
	})
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		props = append(props, &onnxpb.StringStringEntryProto{Key: k, Value: kv[k]})
	}
	m.Proto.MetadataProps = props
}

// SherpaTokens writes a phoneme_id_map as sherpa-onnx's tokens.txt: one
// "symbol id" a line, in id order. sherpa reads a line holding only an id
// as the space symbol, so space is written " id". Its reader takes one
// codepoint per symbol and it feeds one id per codepoint, so a symbol of
// several codepoints (a pinyin final), any other whitespace symbol and a
// symbol of several ids are left out; those are returned as skipped.
func SherpaTokens(ids map[string][]int64) (tokens []byte, skipped []string) {
	type entry struct {
		sym string
		id  int64
	}
	var entries []entry
	for sym, list := range ids {
		r, size := utf8.DecodeRuneInString(sym)
		switch {
		case len(list) == 0:
			continue
		case size != len(sym) || r == utf8.RuneError || (unicode.IsSpace(r) && r != ' ') || len(list) > 1:
			skipped = append(skipped, sym)
			continue
		}
		entries = append(entries, entry{sym, list[0]})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.sym, b.sym))
	})
	var buf bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&buf, "%s %d\n", e.sym, e.id)
	}
	slices.Sort(skipped)
	return buf.Bytes(), skipped
}

// checkSherpaInputs checks that the graph's inputs come in the order
// sherpa-onnx feeds them: input, input_lengths, scales, then sid (which a
// voice with several speakers must have).
func checkSherpaInputs(m *onnx.Model, speakers int) error {
	g := m.Graph()
	inits := make(map[string]bool, len(g.GetInitializer()))
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = true
	}
	var names []string
	for _, in := range g.GetInput() {
		if !inits[in.GetName()] {
			names = append(names, in.GetName())
		}
	}
	want := []string{"input", "input_lengths", "scales"}
	if speakers > 1 || len(names) > len(want) {
		want = append(want, "sid")
	}
	if !slices.Equal(names, want) {
		return fmt.Errorf("%w: inputs %v, want %v in that order", ErrSherpaContract, names, want)
	}
	return nil
}
