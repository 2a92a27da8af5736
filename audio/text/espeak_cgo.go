//go:build cgo

package text

/*
#cgo LDFLAGS: -lespeak-ng
#include <stdlib.h>
#include <espeak-ng/speak_lib.h>
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

// espeakState is libespeak-ng's process-wide state as seen from Go. The
// library is not thread-safe (clause reader, voice and phoneme buffers are
// globals), so every call into it holds mu.
var espeakState struct {
	mu          sync.Mutex
	initialized bool
	dataPath    string // as given to espeak_Initialize; "" for the built-in one
	voice       string // voice currently selected in the library
}

func espeakOpen(dataPath, voice string) error {
	st := &espeakState
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.initialized {
		if err := espeakInitialize(dataPath); err != nil {
			return err
		}
		st.initialized = true
		st.dataPath = dataPath
	} else if dataPath != "" && dataPath != st.dataPath {
		return fmt.Errorf("espeak: %w: already initialized with data path %q, cannot switch to %q (espeak-ng is process wide)", ErrEspeak, st.dataPath, dataPath)
	}
	return espeakSelectVoice(voice)
}

// espeakInitialize starts the library. espeak_Initialize wants the directory
// that contains espeak-ng-data; a path to espeak-ng-data itself is accepted
// too. It is checked here because without espeakINITIALIZE_DONT_EXIT a
// missing data directory makes the library call exit().
func espeakInitialize(dataPath string) error {
	var cpath *C.char
	if dataPath != "" {
		if filepath.Base(filepath.Clean(dataPath)) == "espeak-ng-data" {
			dataPath = filepath.Dir(filepath.Clean(dataPath))
		}
		if _, err := os.Stat(filepath.Join(dataPath, "espeak-ng-data", "phontab")); err != nil {
			return fmt.Errorf("espeak: %w: no espeak-ng-data in %q: %v", ErrEspeak, dataPath, err)
		}
		cpath = C.CString(dataPath)
		defer C.free(unsafe.Pointer(cpath))
	}
	rate := C.espeak_Initialize(C.AUDIO_OUTPUT_SYNCHRONOUS, 0, cpath, C.espeakINITIALIZE_DONT_EXIT)
	if rate <= 0 {
		return fmt.Errorf("espeak: %w: initialize failed (code %d); install espeak-ng-data or set DataPath", ErrEspeak, int(rate))
	}
	return nil
}

// espeakSelectVoice switches the library's voice; the caller holds mu.
func espeakSelectVoice(voice string) error {
	st := &espeakState
	if st.voice == voice {
		return nil
	}
	cv := C.CString(voice)
	defer C.free(unsafe.Pointer(cv))
	if rc := C.espeak_SetVoiceByName(cv); rc != C.EE_OK {
		st.voice = ""
		return fmt.Errorf("espeak: %w: voice %q not found (code %d); `espeak-ng --voices` lists them", ErrEspeak, voice, int(rc))
	}
	st.voice = voice
	return nil
}

// espeakClauses phonemizes text (valid UTF-8 without NUL) clause by clause.
func espeakClauses(voice, text string) ([]espeakClause, error) {
	st := &espeakState
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := espeakSelectVoice(voice); err != nil {
		return nil, err
	}
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	base := uintptr(unsafe.Pointer(ctext))

	var clauses []espeakClause
	p := unsafe.Pointer(ctext)
	// Each call consumes at least one rune except the one that flushes the
	// rune espeak read ahead, so this bound is never reached by a working
	// library; it only stops a broken one from looping forever.
	for calls := 0; p != nil; calls++ {
		if calls > len(text)+1 {
			return nil, fmt.Errorf("espeak: %w: clause reader made no progress", ErrEspeak)
		}
		from := int(uintptr(p) - base)
		ph := C.espeak_TextToPhonemes(&p, C.espeakCHARS_UTF8, C.espeakPHONEMES_IPA)
		if ph == nil {
			return nil, fmt.Errorf("espeak: %w: cannot decode text", ErrEspeak)
		}
		to := len(text)
		if p != nil {
			to = min(max(int(uintptr(p)-base), from), len(text))
		}
		clauses = append(clauses, espeakClause{
			phonemes: C.GoString(ph),
			source:   text[from:to],
			last:     p == nil,
		})
	}
	return clauses, nil
}
