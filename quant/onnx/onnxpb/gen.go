// Package onnxpb holds the Go types generated from onnx.proto, the ONNX
// model format. Code outside quant/onnx should use package onnx instead.
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto
