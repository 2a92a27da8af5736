// Package gate decides whether a rewritten (quantized) ONNX model may
// replace its original: it runs both in ONNX Runtime on the same fixed
// inputs, measures how far the candidate's outputs are from the original's
// and, when asked, how much slower it is, and returns a Verdict that names
// every check with its value and limit.
//
// Three kinds of model have a checker each:
//
//   - CheckVoice: a Piper-contract voice (input, input_lengths, scales,
//     optional sid → output [1, 1, 1, T]) on a fixed set of sentences with
//     noise_scale = noise_w = 0, compared as audio (SNR, spectral
//     correlation, log-mel distance, length);
//   - CheckDecoder: an autoregressive decoder with a per-layer KV cache
//     (past_key_values.{i}.key → present.{i}.key), driven through prompt
//     prefill and a one-token-per-step loop, each model feeding back its
//     own outputs, compared as tensors;
//   - CheckModel: any model on caller-given inputs, compared as tensors
//     (max and mean abs error, relative L2 error, cosine).
//
// Speed is the median of SpeedRuns timed runs of the whole workload per
// model, interleaved ABBA so that drift of the machine (thermal, other
// load) falls on both alike.
//
// The default limits (DefaultThresholds) were calibrated on the project's
// own models; see the Thresholds fields for what each means and the
// calibration figures behind it.
package gate

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mynah-tts/mynah/quant/ort"
)

// Errors returned by this package. Test for them with errors.Is; the
// wrapping error says which model, input or field.
var (
	// ErrUnknownPrecision means a precision name DefaultThresholds does not
	// know.
	ErrUnknownPrecision = errors.New("unknown precision")
	// ErrInvalidOptions means an options field is out of range or missing;
	// the message names the field and its limit.
	ErrInvalidOptions = errors.New("invalid gate options")
	// ErrIncompatible means the candidate does not have the original's
	// inputs and outputs (names, element types), or a model does not follow
	// the contract its checker expects.
	ErrIncompatible = errors.New("models are not comparable")
	// ErrFailed is wrapped by Verdict.Err when a check failed.
	ErrFailed = errors.New("quality gate failed")
)

// Limits on the work one check does, so that options from a command line or
// a config file cannot make the gate run for hours.
const (
	// MaxSpeedRuns bounds Options.SpeedRuns.
	MaxSpeedRuns = 1000
	// MaxRuns bounds the number of input sets (sentences, prompts, model
	// input sets) one check runs.
	MaxRuns = 256
	// MaxSteps bounds DecoderOptions.Steps (decoder steps per prompt).
	MaxSteps = 4096
	// DefaultSpeedRuns is the number of timed runs per model when
	// Options.SpeedRuns is 0.
	DefaultSpeedRuns = 5
)

// Precision names accepted by DefaultThresholds. They are the quantization
// modes of the mynah quantize command plus the daemon's precision names.
const (
	PrecisionFP32  = "fp32"
	PrecisionFP16  = "fp16" // also accepted as "fp16-store"
	PrecisionInt8  = "int8"
	PrecisionNBits = "nbits"
	PrecisionAuto  = "auto"
)

// Thresholds are the limits a candidate must meet. A zero field is not
// checked, so a caller can turn single checks off.
//
// Audio checks compare each sentence's waveform; the worst sentence counts.
// Tensor checks compare each output's values of all runs (and decoder
// steps) taken together; max abs error is the worst single element.
type Thresholds struct {
	// MinSNR is the least waveform signal-to-noise ratio in dB, the
	// original being the signal and the difference the noise.
	MinSNR float64
	// MinAlignedSNR is the least AlignedSNR in dB (see AudioMetrics).
	MinAlignedSNR float64
	// MinSpectralCorrelation is the least mean correlation of the magnitude
	// spectra of the two waveforms' frames (1 = same spectral shape).
	MinSpectralCorrelation float64
	// MaxLogMelDistance is the largest mean absolute difference of the two
	// 80-band log-mel spectrograms, in dB.
	MaxLogMelDistance float64
	// MaxLengthDiff is the largest difference in length of the audio, as a
	// fraction of the original's length.
	MaxLengthDiff float64

	// MinCosine is the least cosine similarity of an output tensor to the
	// original's.
	MinCosine float64
	// MaxRelativeError is the largest ‖candidate − original‖ / ‖original‖
	// of an output tensor.
	MaxRelativeError float64
	// MaxAbsError is the largest absolute difference of any one element.
	MaxAbsError float64

	// MaxSlowdown is how much slower than the original the candidate may be,
	// as a fraction of the original's median time (0.05 = 5%). It is only
	// checked when Options.CheckSpeed is set.
	MaxSlowdown float64
}

// Calibration, measured by this package's tests (weights rewritten in Go
// to simulate each precision; figures from the default sentences):
//
//   - fp16 weights: a HiFi-GAN-style vocoder (quant/benchmodel) keeps SNR
//     39.5 dB, spectral correlation 0.99994, log-mel distance 0.04 dB; the
//     demo voice 74.8 dB, 1.0 and 0.001 dB (its pitch columns are stored
//     exactly, see audio/voice/demo). The same voice with its parameter
//     table 1/2048 off keeps spectral correlation 0.993 and log-mel
//     distance 0.33 dB, but its SNR falls to −3.8 dB: it integrates f0
//     into phase, so the waveform drifts while the sound stays
//     (TestCheckVoicePhaseDrift). The SNR check is the one that notices.
//   - white noise added to the demo voice: 40 dB under it costs 0.3–0.5 dB
//     of log-mel distance, 30 dB costs 3.2–4.4 dB, 20 dB about 8 dB (the
//     noise fills pauses and spectral valleys; TestLogMelBoundCalibration). The int8/nbits bound of 1.5 dB lets
//     the first through and refuses the others.
//   - destructive weights: 2-bit blocks give correlation 0.42 and 5.4 dB
//     on the vocoder; on the cloning decoder prosody cosine 0.60 and
//     relative error 0.93. int8 per-channel weights of the decoder give
//     prosody cosine 0.99996 and relative error 0.009. The quantizer's
//     own outputs (cmd/mynah TestQuantizeDecoder): int8 prosody cosine
//     0.9999, worst KV tensor 0.9999; nbits (4-bit blocks of 32, head in
//     int8) 0.997 and 0.995 with relative errors 0.07 and 0.10 — through
//     the 0.99 / 0.15 limits with room, while a decoder whose blocks
//     overwrite the residual stream instead of adding to it (width 64,
//     unscaled projections) gave 0.97 / 0.21 under 4 bits and was refused;
//     its own 2-bit setting gives 0.97 / 0.22 and is refused.
var defaultThresholds = map[string]Thresholds{
	PrecisionFP16: {
		MinSNR: 30, MinSpectralCorrelation: 0.995, MaxLogMelDistance: 0.5, MaxLengthDiff: 0.01,
		MinCosine: 0.9999, MaxRelativeError: 0.01,
		MaxSlowdown: 0.05,
	},
	PrecisionInt8: {
		MinSpectralCorrelation: 0.98, MaxLogMelDistance: 1.5, MaxLengthDiff: 0.01,
		MinCosine: 0.99, MaxRelativeError: 0.15,
		MaxSlowdown: 0.05,
	},
}

// DefaultThresholds returns the project's limits for a precision: "fp16"
// (or "fp16-store") — spectral correlation ≥ 0.995, SNR ≥ 30 dB, log-mel
// distance ≤ 0.5 dB, tensor cosine ≥ 0.9999; "int8", "nbits" and "auto"
// (which mixes them with fp16) — spectral correlation ≥ 0.98, log-mel
// distance ≤ 1.5 dB, tensor cosine ≥ 0.99 and relative error ≤ 0.15;
// "fp32" (a rewrite that should change nothing) gets the fp16 limits. All
// allow a 1% length difference and, when speed is checked, 5% slowdown.
func DefaultThresholds(precision string) (Thresholds, error) {
	switch strings.ToLower(strings.TrimSpace(precision)) {
	case PrecisionFP16, "fp16-store", PrecisionFP32:
		return defaultThresholds[PrecisionFP16], nil
	case PrecisionInt8, PrecisionNBits, PrecisionAuto:
		return defaultThresholds[PrecisionInt8], nil
	}
	return Thresholds{}, fmt.Errorf("%w %q: want fp32, fp16, fp16-store, int8, nbits or auto", ErrUnknownPrecision, precision)
}

// Options are what every checker shares. A nil *Options means the
// defaults: int8 thresholds (the looser set: say what the candidate is),
// no speed check, ONNX Runtime's default session options.
type Options struct {
	// Precision selects DefaultThresholds when Thresholds is nil; "" means
	// "int8".
	Precision string
	// Thresholds, when set, replace the precision's defaults entirely.
	Thresholds *Thresholds
	// CheckSpeed times both models and checks MaxSlowdown.
	CheckSpeed bool
	// SpeedRuns is the number of timed runs of the workload per model,
	// 1..MaxSpeedRuns; 0 means DefaultSpeedRuns.
	SpeedRuns int
	// Session configures both sessions (provider, threads). Speed is
	// compared under exactly these settings, so set them as the device
	// that will run the model does.
	Session *ort.SessionOptions
	// Logger receives one debug line per run; nil discards.
	Logger *slog.Logger
}

// resolved is Options with defaults applied and thresholds settled.
type resolved struct {
	precision string
	th        Thresholds
	speed     bool
	speedRuns int
	session   *ort.SessionOptions
	log       *slog.Logger
}

func (o *Options) resolve() (resolved, error) {
	var in Options
	if o != nil {
		in = *o
	}
	r := resolved{precision: in.Precision, speed: in.CheckSpeed, speedRuns: in.SpeedRuns, session: in.Session, log: in.Logger}
	if r.precision == "" {
		r.precision = PrecisionInt8
	}
	if in.Thresholds != nil {
		r.th = *in.Thresholds
	} else {
		th, err := DefaultThresholds(r.precision)
		if err != nil {
			return r, fmt.Errorf("gate options: Precision: %w", err)
		}
		r.th = th
	}
	if r.speedRuns == 0 {
		r.speedRuns = DefaultSpeedRuns
	}
	if r.speedRuns < 1 || r.speedRuns > MaxSpeedRuns {
		return r, fmt.Errorf("%w: SpeedRuns %d: want 1..%d (MaxSpeedRuns)", ErrInvalidOptions, in.SpeedRuns, MaxSpeedRuns)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}
