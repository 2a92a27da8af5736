// Package voice holds mynah's voice engines, which all speak sentence by
// sentence (the first plays while the next is synthesized) through the same
// text front end (espeak-ng, or mynah's pinyin front end for Mandarin):
//
//   - Piper runs a Piper voice (NAME.onnx + NAME.onnx.json) unchanged:
//     phoneme ids → one ONNX Runtime call per sentence → int16 PCM.
//   - Style runs a style_vector bundle (the Kokoro contract): tokens, a
//     style vector chosen from a voice pack by token count, and a speed.
//   - Pipeline runs a cloning bundle: Enroll turns a reference recording
//     into an Embedding with the speaker encoder; per sentence, the
//     autoregressive decoder continues from the speaker's cached prefix (or
//     a session's state) step by step, and the vocoder speaks with the
//     embedding.
//
// Bundles are directories with a voice.json (package bundle), checked
// against their models at load.
package voice
