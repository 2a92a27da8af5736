# mynah — the two commands a newcomer needs are `make run` and `make test`.
# Both run scripts/setup.sh first (system packages, pinned ONNX Runtime).

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
export CGO_ENABLED := 1

VOICE_DIR ?= var/voices/mynah-demo
GREETING  ?= Hello! I am mynah. I speak offline, with a voice this project built itself.

.PHONY: all setup build run say install test test-arm64 bench bench-peer fuzz demo-voice vet clean

all: build

setup:
	scripts/setup.sh

# VERSION is what mynahd -version, mynah version and Home Assistant's device
# page show.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/mynah-tts/mynah/cmd/internal/version.stamped=$(VERSION)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

demo-voice: build
	@test -f $(VOICE_DIR)/mynah-demo.onnx || bin/mynah voice demo --out $(VOICE_DIR)

# run: set up, build, and start mynahd on its embedded defaults (embedded
# MQTT broker on 127.0.0.1:1883, the demo voice); it speaks a greeting and
# then takes mosquitto_pub -t mynah/mynah/say -m "..." until Ctrl-C. Without
# a sound card the speech goes to var/speech.wav.
run: setup build
	scripts/run.sh

# say: speak one text with the CLI, no daemon.
say: setup build demo-voice
	bin/mynah say --voice $(VOICE_DIR) --fallback-wav var/greeting.wav "$(GREETING)"

install: build
	scripts/install.sh

# test: set up, then the whole suite with the race detector. Tests use the
# real ONNX Runtime, libespeak-ng and PortAudio (through an ALSA file device).
# The PortAudio binding hands C a Go integer disguised as a pointer, which
# the race detector's pointer checks reject (a crash in OpenStream); the
# gcflags turn those checks off in that one package only.
RACEFLAGS := -race -gcflags='github.com/gordonklaus/portaudio=-d=checkptr=0'

# The phrase codec has an AVX2 kernel on amd64; -tags purego runs its
# tests again on the pure Go path that arm64 devices use.
#
# int8 weights are stored per class of CPU (quant/cpuclass); test-avx2.sh
# runs quant's int8 tests again on valgrind's CPU, AVX2 without VNNI, so a
# VNNI machine checks the avx2 class too (an AVX2-only one checks it
# natively; no emulator here has VNNI, so the vnni class is checked only on
# VNNI machines).
test: setup vet
	$(GO) test $(RACEFLAGS) -count=1 -timeout 30m ./...
	$(GO) test -tags purego -count=1 ./audio/
	scripts/test-avx2.sh

# test-arm64: the suite again as arm64 binaries under qemu-aarch64, against
# Debian's arm64 libraries and the arm64 ONNX Runtime (scripts/cross-test.sh;
# about an hour on 2 cores). MYNAH_QEMU_CPU=cortex-a72 emulates a Pi 4
# instead of a Pi 5.
test-arm64: setup
	scripts/cross-test.sh

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags purego ./audio/

# bench: Go benchmarks of every package, printed as one table, then the
# peer benchmark where it can run (linux x64).
bench: setup
	scripts/bench.sh
	scripts/bench-peer.sh --optional

# bench-peer: mynah against sherpa-onnx (npm sherpa-onnx-node, which brings
# its own ONNX Runtime) on the same Piper-contract models, one table per
# model; installs sherpa-onnx into .peer/ on first use. Linux x64 only.
bench-peer: setup
	scripts/bench-peer.sh

# fuzz: each fuzz target for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz: setup
	scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin var
