#!/usr/bin/env bash
# test-avx2.sh runs quant's int8 tests as an x86 CPU without VNNI runs them.
#
# ONNX Runtime's u8×s8 kernel on AVX2 without VNNI adds pairs of products
# in 16 bits and saturates with full-range int8 weights; mynah stores int8
# weights in a format chosen per class of CPU (quant/cpuclass). On a CPU
# with VNNI, make test has checked the vnni class natively; this runs the
# same tests again under valgrind, whose virtual CPU is AVX2 without VNNI
# (and without AVX-512), so ONNX Runtime dispatches to its AVX2 kernels
# and every test sees the avx2 class (MYNAH_EXPECT_CPU_CLASS fails them
# if not). On an x86 CPU without VNNI that repeats what ran natively, in
# about half a minute. On other architectures there is no AVX2 kernel to
# check: the script says so and stops.
#
#   scripts/test-avx2.sh     (make test runs it)
set -euo pipefail
# shellcheck source=setup.sh
source "$(dirname "$0")/setup.sh"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

if [ "$(uname -m)" != x86_64 ]; then
  step "$(uname -m): no x86 AVX2 kernels to check here"
  exit 0
fi
install_packages valgrind
cd "$root"
mkdir -p var
"$GO" test -c -o var/quant-avx2.test ./quant/
step "quant int8 tests on valgrind's CPU (AVX2, no VNNI)"
# Tests run in their package's directory. Go's asynchronous preemption
# signals are needless noise under valgrind. Go's runtime reads the clock
# with RDTSCP where CPUID has it, and valgrind's CPU on an AMD EPYC host
# says it has it but cannot run it (SIGILL in runtime.cputicks): cpu.rdtscp=off
# keeps the runtime to RDTSC. (golang.org/x/sys/cpu, which reads GODEBUG
# too, does not know that feature and says so once; nothing else changes.)
cd quant
MYNAH_EXPECT_CPU_CLASS=avx2 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off \
  valgrind --tool=none --error-exitcode=1 -q ../var/quant-avx2.test \
  -test.run 'TestInt8Saturation|InORT' -test.count=1 -test.timeout=20m
