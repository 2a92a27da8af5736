// Package ort runs ONNX models with ONNX Runtime through
// github.com/yalue/onnxruntime_go, and is the only cgo in quant/.
//
// It finds the library (FindLibrary), loads it once per process (Open,
// reference-counted), creates sessions from model bytes with a chosen
// execution provider and a CPU fallback (Runtime.NewSession), reports each
// model's inputs and outputs (read from its protobuf) and metadata, and runs
// models on plain Go slices (Session.Run). No onnxruntime_go or C type
// appears in its API.
//
// Typical use:
//
//	rt, err := ort.Open(&ort.Options{LibraryPath: cfg.ORTLib, Logger: log})
//	if err != nil {
//		return err // ErrLibraryNotFound says where it looked and what to do
//	}
//	defer rt.Close()
//	sess, err := rt.NewSession(modelBytes, &ort.SessionOptions{IntraOpThreads: 2})
//	if err != nil {
//		return err
//	}
//	defer sess.Close()
//	out, err := sess.Run([]ort.Tensor{
//		{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
//		{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
//		{Name: "scales", Shape: []int64{3}, Float32: []float32{0.667, 1, 0.8}},
//	})
//	audio := out[0].Float32
//
// Runs may be concurrent. For a KV cache, pass the next step's present
// buffers to RunWithOutputs: ONNX Runtime then writes into them directly
// instead of allocating an output that is copied into Go afterwards.
//
// Built without cgo, the package compiles and Open returns ErrUnsupported.
package ort
