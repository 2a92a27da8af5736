package wyoming

import "encoding/json"

// The info event, as the Python library's Info/TtsProgram/TtsVoice
// dataclasses read it: every Artifact field (name, attribution, installed,
// description, version) is present, and the lists HA does not use here are
// empty, not missing.
type (
	infoData struct {
		ASR    []struct{}   `json:"asr"`
		TTS    []ttsProgram `json:"tts"`
		Handle []struct{}   `json:"handle"`
		Intent []struct{}   `json:"intent"`
		Wake   []struct{}   `json:"wake"`
	}
	attribution struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	}
	ttsProgram struct {
		Name                        string      `json:"name"`
		Description                 string      `json:"description"`
		Attribution                 attribution `json:"attribution"`
		Installed                   bool        `json:"installed"`
		Version                     string      `json:"version"`
		Voices                      []ttsVoice  `json:"voices"`
		SupportsSynthesizeStreaming bool        `json:"supports_synthesize_streaming"`
	}
	ttsVoice struct {
		Name        string       `json:"name"`
		Description string       `json:"description"`
		Attribution attribution  `json:"attribution"`
		Installed   bool         `json:"installed"`
		Version     *string      `json:"version"`
		Languages   []string     `json:"languages"`
		Speakers    []ttsSpeaker `json:"speakers,omitempty"`
	}
	ttsSpeaker struct {
		Name string `json:"name"`
	}
)

// Program names and attribution in info. Home Assistant names its TTS
// entity after the program and lists each voice under its description.
const (
	programName        = "mynah"
	programDescription = "mynah offline text to speech"
	attributionName    = "mynah"
	attributionURL     = "https://github.com/mynah-tts/mynah"
)

// infoEvent builds the answer to describe from the engine's voices.
func infoEvent(version string, voices []VoiceInfo) (Event, error) {
	attr := attribution{Name: attributionName, URL: attributionURL}
	prog := ttsProgram{
		Name:                        programName,
		Description:                 programDescription,
		Attribution:                 attr,
		Installed:                   true,
		Version:                     version,
		Voices:                      make([]ttsVoice, 0, len(voices)),
		SupportsSynthesizeStreaming: true,
	}
	for _, v := range voices {
		tv := ttsVoice{
			Name:        v.Name,
			Description: v.Description,
			Attribution: attr,
			Installed:   !v.NotInstalled,
			Languages:   v.Languages,
		}
		if tv.Description == "" {
			tv.Description = v.Name
		}
		if tv.Languages == nil {
			tv.Languages = []string{}
		}
		if v.Version != "" {
			tv.Version = &v.Version
		}
		for _, s := range v.Speakers {
			tv.Speakers = append(tv.Speakers, ttsSpeaker{Name: s})
		}
		prog.Voices = append(prog.Voices, tv)
	}
	data, err := json.Marshal(infoData{
		ASR: []struct{}{}, TTS: []ttsProgram{prog}, Handle: []struct{}{}, Intent: []struct{}{}, Wake: []struct{}{},
	})
	if err != nil {
		return Event{}, err
	}
	return Event{Type: typeInfo, Data: data}, nil
}
