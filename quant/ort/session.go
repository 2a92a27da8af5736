package ort

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Session is a loaded model. Run may be called from many goroutines at once:
// ONNX Runtime sessions are safe for concurrent runs, and each Run has its
// own tensors. Close waits for runs in flight.
type Session struct {
	rt       *Runtime
	provider Provider
	inputs   []TensorInfo
	outputs  []TensorInfo
	meta     map[string]string

	mu     sync.RWMutex // Run holds it shared, Close exclusively
	closed bool
	b      *backendSession
	free   func() // after the session is destroyed (NewSessionORT's buffer)
	arena  bool   // SessionOptions.CPUArena
}

// Provider is the execution provider the session actually uses (never
// ProviderAuto).
func (s *Session) Provider() Provider { return s.provider }

// Inputs describes the model's inputs in model order, as ONNX Runtime reads
// them (initializers are not inputs).
func (s *Session) Inputs() []TensorInfo { return cloneInfos(s.inputs) }

// Outputs describes the model's outputs in model order, with the dims the
// file declares: a dimension it leaves open is -1 even where ONNX
// Runtime's shape inference could fix it (an output of undeclared rank,
// or a float16 one with an open dimension, is reported as ONNX Runtime
// infers it, because Run needs that).
func (s *Session) Outputs() []TensorInfo { return cloneInfos(s.outputs) }

// Metadata is the model's custom metadata (metadata_props); empty if none.
func (s *Session) Metadata() map[string]string { return maps.Clone(s.meta) }

// Run runs the model once. inputs must name every model input exactly once
// (any order); their types and fixed dimensions must match the model. It
// returns every model output, in model order, as fresh Go slices.
//
// onnxruntime_go v1.27.0 cannot hand over ORT-allocated float16 or rank-0
// outputs, so this package allocates those itself from the model's declared
// shape: a float16 output with a dynamic dimension needs its shape given
// through RunWithOutputs (Run says so), and an output whose rank the model
// leaves undeclared is taken to be a scalar.
func (s *Session) Run(inputs []Tensor) ([]Tensor, error) {
	return s.RunWithOutputs(inputs, nil)
}

// RunWithOutputs is Run with some outputs shaped, and optionally backed, by
// the caller: each Tensor in outputs names a model output and sets its Shape;
// a data slice of exactly that size is written in place (reuse a KV buffer
// across steps), none means one is allocated. ONNX Runtime then writes
// straight into Go memory, saving a copy. Outputs not listed are allocated by
// ONNX Runtime as in Run. The result lists every output in model order.
func (s *Session) RunWithOutputs(inputs, outputs []Tensor) ([]Tensor, error) {
	return s.run(inputs, outputs, false)
}

// ReleaseArena has a session with SessionOptions.CPUArena give the
// arena's free regions back to the C allocator, which ONNX Runtime does
// only at the end of a run: it runs the model once on inputs, which
// should be the smallest the model takes, and drops the outputs. Runs in
// flight keep what they use. Without the arena it neither looks at inputs
// nor runs the model, and returns nil; on a closed session it returns an
// error wrapping ErrClosed either way.
func (s *Session) ReleaseArena(inputs []Tensor) error {
	if !s.arena {
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if closed {
			return fmt.Errorf("release arena: session: %w", ErrClosed)
		}
		return nil
	}
	if _, err := s.run(inputs, nil, true); err != nil {
		return fmt.Errorf("release arena: %w", err)
	}
	return nil
}

func (s *Session) run(inputs, outputs []Tensor, shrink bool) ([]Tensor, error) {
	in, err := matchInputs(s.inputs, inputs)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	out, err := matchOutputs(s.outputs, outputs)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("run: session: %w", ErrClosed)
	}
	res, err := s.b.run(in, out, shrink)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return res, nil
}

// Close releases the session once runs in flight have finished. A second
// Close returns nil.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.b.destroy()
	s.b = nil
	if s.free != nil {
		s.free()
		s.free = nil
	}
	s.mu.Unlock()
	s.rt.forget(s)
	if err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	return nil
}

func cloneInfos(list []TensorInfo) []TensorInfo {
	out := slices.Clone(list)
	for i := range out {
		out[i].Dims = slices.Clone(out[i].Dims)
	}
	return out
}
