package engine

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// VoiceInfo describes an installed voice from its config files, without
// loading it: what a front end lists (Home Assistant's voice picker).
type VoiceInfo struct {
	Name string
	Kind string // piper, style_vector, pipeline, or remote (KindRemote)
	// Languages are language tags in the form Home Assistant uses
	// (en_US, zh_CN): the config's language code, else the espeak-ng
	// voice's.
	Languages []string
	// Speakers a request may name: a Piper voice's speaker_id_map, a
	// style pack's voices, a cloning voice's shared cloned speakers.
	Speakers   []string
	SampleRate int
}

// Describe lists the installed voices that can be read, sorted by name.
// A voice whose config does not parse is left out (it cannot speak
// either; loading it reports why).
func (vs *Engine) Describe() []VoiceInfo {
	paths, err := vs.scan()
	if err != nil {
		return nil
	}
	var shared []string
	if vs.store != nil {
		for _, s := range vs.store.ListSpeakers() {
			if s.Owner == "" {
				shared = append(shared, s.Name)
			}
		}
		slices.Sort(shared)
	}
	var out []VoiceInfo
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		p := paths[name]
		info, err := vs.infos.get(p.path+"\x00"+p.kind, func() (VoiceInfo, []string, error) {
			info, err := describe(name, p, nil)
			return info, kindFiles(p.path), err
		})
		info.Name = name
		info.Languages, info.Speakers = slices.Clone(info.Languages), slices.Clone(info.Speakers)
		if p.kind == kindPipeline {
			info.Speakers = slices.Clone(shared)
		}
		if err != nil {
			vs.log.Debug("voice not described", "voice", name, "err", err)
			continue
		}
		out = append(out, info)
	}
	for _, rv := range vs.catalogVoices() {
		if _, installed := paths[rv.Name]; installed || slices.ContainsFunc(out, func(v VoiceInfo) bool { return v.Name == rv.Name }) {
			continue
		}
		info := VoiceInfo{Name: rv.Name, Kind: KindRemote, Speakers: rv.Speakers, SampleRate: rv.SampleRate}
		if rv.Language != "" {
			info.Languages = []string{rv.Language}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b VoiceInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// KindRemote is VoiceInfo.Kind of a voice only the render nodes have
// (Options.RemoteVoices).
const KindRemote = "remote"

func describe(name string, p voicePath, shared []string) (VoiceInfo, error) {
	info := VoiceInfo{Name: name, Kind: p.kind}
	if p.kind == kindPiper {
		model, err := voice.FindPiper(p.path)
		if err != nil {
			return info, err
		}
		cfg, err := voice.ReadPiperConfig(model + ".json")
		if err != nil {
			return info, err
		}
		info.SampleRate = cfg.Audio.SampleRate
		info.Languages = languages(cfg.Language.Code, cfg.Espeak.Voice)
		type sp struct {
			name string
			id   int64
		}
		var sps []sp
		for n, id := range cfg.SpeakerIDMap {
			sps = append(sps, sp{n, id})
		}
		slices.SortFunc(sps, func(a, b sp) int { return cmp.Or(cmp.Compare(a.id, b.id), strings.Compare(a.name, b.name)) })
		for _, s := range sps {
			info.Speakers = append(info.Speakers, s.name)
		}
		return info, nil
	}
	data, err := os.ReadFile(filepath.Join(p.path, bundle.ManifestName))
	if err != nil {
		return info, err
	}
	m, err := bundle.Parse(data)
	if err != nil {
		return info, err
	}
	info.SampleRate = m.SampleRate
	info.Languages = languages("", m.Text.Language)
	switch p.kind {
	case kindStyle:
		info.Speakers = slices.Sorted(maps.Keys(m.Voices))
	case kindPipeline:
		info.Speakers = slices.Clone(shared)
	default:
		return info, fmt.Errorf("kind %q", p.kind)
	}
	return info, nil
}

// languages turns a config's language code (en_US) or an espeak-ng voice
// name (en-us, cmn, en-gb-x-rp) into Home Assistant's form: language,
// underscore, upper-case region.
func languages(code, espeak string) []string {
	tag := code
	if tag == "" {
		tag = espeak
	}
	if tag == "" {
		return nil
	}
	parts := strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' })
	lang := strings.ToLower(parts[0])
	if lang == "cmn" {
		lang = "zh" // Mandarin: Home Assistant lists it as zh
	}
	if len(parts) > 1 && len(parts[1]) == 2 {
		return []string{lang + "_" + strings.ToUpper(parts[1])}
	}
	return []string{lang}
}
