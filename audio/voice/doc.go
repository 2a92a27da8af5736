// Package voice holds mynah's voice engines. The Piper engine runs a Piper
// voice (NAME.onnx + NAME.onnx.json) unchanged: text front end → phoneme ids
// → one ONNX Runtime call per sentence → int16 PCM, streamed sentence by
// sentence so the first sentence plays while the next is synthesized.
package voice
