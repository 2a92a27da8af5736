// Package peer measures mynah's Piper engine against a peer runtime,
// sherpa-onnx, on the very same models (make bench-peer).
//
// sherpa-onnx runs Piper voices, but not as Piper ships them: its VITS
// loader wants the voice's facts as ONNX metadata_props and its phoneme
// table as a tokens.txt. ExportSherpa writes such a copy of a Piper voice;
// mynah loads the original unchanged.
//
// Each side runs in a worker process of its own, so that neither runtime's
// threads, heap or peak RSS leak into the other's numbers. A worker speaks
// a line protocol of one JSON object a line: after loading the model it
// prints a Ready line (with the load time it measured around its own load
// call), then answers every Say line with a Said line (with the synthesis
// time it measured around its own synthesis call). Worker starts a worker
// and talks to it; Serve is the worker's side of the loop.
package peer
