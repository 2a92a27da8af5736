// Package bundle reads mynah's voice bundles: a directory with a voice.json
// manifest that names the engine that runs it, the model files with their
// sha256 digests, and, for each role a model plays, the real names of the
// model's input and output tensors.
//
// Plain Piper voices (NAME.onnx + NAME.onnx.json) need no manifest; a
// bundle is how voices that are not Piper voices (a speaker encoder with an
// autoregressive decoder and a vocoder, or a Kokoro-style model with a pack
// of style vectors) say how they are wired. Three engines exist:
//
//   - "piper": role "model", inputs ids, lengths, scales (and optional sid),
//     output audio.
//   - "pipeline": roles "encoder" (inputs audio; outputs embedding, prompt),
//     "decoder" (inputs ids, prev; outputs prosody; a per-layer KV cache
//     described by "kv") and "vocoder" (inputs ids, lengths, scales, prosody,
//     embedding; output audio).
//   - "style_vector": role "model" (inputs tokens, style, speed; output
//     audio), the "style" table shape and row rule, and "voices", one raw
//     little-endian float32 [rows, 1, dim] file per voice.
//
// The pieces are used in this order: Parse checks a manifest on its own
// (strict JSON: unknown keys, bad paths, out-of-range numbers and dangling
// file references are errors that name the field); Load parses a
// directory's voice.json and verifies every file's size and digest through
// an os.Root, so that neither ".." nor a symlink can reach outside the
// bundle; Manifest.CheckModel compares a role's declared tensors with what
// ONNX Runtime reports for the loaded model, so a mismatch fails at load
// with an error naming the role and the tensor instead of at the first
// sentence.
package bundle
