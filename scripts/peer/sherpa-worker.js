#!/usr/bin/env node
// sherpa-worker.js is the sherpa-onnx side of make bench-peer
// (audio/voice/peer): it loads one Piper voice exported for sherpa-onnx
// (model.onnx with metadata_props, tokens.txt) and speaks the line protocol
// of package peer on stdin/stdout, one JSON object a line:
//
//   out: {"ready":true,"runtime":...,"load_ms":...,"sample_rate":...,"base_rss_kb":...}
//   in:  {"text":"One sentence."}
//   out: {"ms":...,"samples":...}          or {"error":"..."}
//
//   NODE_PATH=.peer/node_modules node scripts/peer/sherpa-worker.js \
//     --model DIR/model.onnx --tokens DIR/tokens.txt --data-dir ESPEAK_NG_DATA \
//     --noise-scale 0.667 --noise-w 0.8 --length-scale 1
//
// load_ms times `new OfflineTts(config)` alone and ms each `generate` call
// alone. The settings match mynah's worker: one intra-op thread on the CPU,
// the voice's noise and length scales, one sentence per call
// (maxNumSentences 1) and silenceScale 1. sherpa's default of 0.2 shortens
// the silences inside the generated audio afterwards, which mynah does not
// do; sherpa-onnx-node 1.13.8 ignores silenceScale in the OfflineTts config
// and applies 0.2 on the plain generate path, so it is set per call through
// a GenerationConfig (the demo voice's audio then matches mynah's sample for
// sample in length).
'use strict';

const fs = require('fs');
const readline = require('readline');

function fail(msg) {
  process.stdout.write(JSON.stringify({error: msg}) + '\n');
  process.exit(1);
}

function parseArgs(argv) {
  const want = {
    '--model': 'model', '--tokens': 'tokens', '--data-dir': 'dataDir',
    '--noise-scale': 'noiseScale', '--noise-w': 'noiseScaleW', '--length-scale': 'lengthScale',
  };
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = want[argv[i]];
    if (!key || i + 1 >= argv.length) fail(`sherpa-worker: bad argument ${argv[i]}`);
    out[key] = argv[i + 1];
  }
  for (const flag of Object.keys(want)) {
    if (out[want[flag]] === undefined) fail(`sherpa-worker: ${flag} is required`);
  }
  for (const k of ['noiseScale', 'noiseScaleW', 'lengthScale']) {
    const v = Number(out[k]);
    if (!Number.isFinite(v) || v < 0) fail(`sherpa-worker: ${k} ${out[k]} is not a scale`);
    out[k] = v;
  }
  return out;
}

function rssKB() {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

function msSince(t0) {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  let sherpa, version;
  try {
    sherpa = require('sherpa-onnx-node');
    version = require('sherpa-onnx-node/package.json').version;
  } catch (e) {
    fail(`sherpa-worker: cannot load sherpa-onnx-node (run make bench-peer, which installs it into .peer/): ${e.message}`);
  }
  const config = {
    model: {
      vits: {
        model: args.model, tokens: args.tokens, dataDir: args.dataDir,
        noiseScale: args.noiseScale, noiseScaleW: args.noiseScaleW, lengthScale: args.lengthScale,
      },
      numThreads: 1,
      provider: 'cpu',
      debug: false,
    },
    maxNumSentences: 1,
  };
  const generation = new sherpa.GenerationConfig({silenceScale: 1.0, sid: 0, speed: 1.0});
  const base = rssKB();
  let tts;
  const t0 = process.hrtime.bigint();
  try {
    tts = new sherpa.OfflineTts(config);
  } catch (e) {
    fail(`sherpa-worker: load ${args.model}: ${e.message}`);
  }
  const loadMS = msSince(t0);
  process.stdout.write(JSON.stringify({
    ready: true, runtime: `sherpa-onnx ${version}`, load_ms: loadMS,
    sample_rate: tts.sampleRate, base_rss_kb: base,
  }) + '\n');

  const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  rl.on('line', (line) => {
    let reply;
    try {
      const req = JSON.parse(line);
      if (typeof req.text !== 'string' || req.text === '') throw new Error('no text');
      const t = process.hrtime.bigint();
      const audio = tts.generate({text: req.text, sid: 0, speed: 1.0, generationConfig: generation});
      reply = {ms: msSince(t), samples: audio.samples.length};
    } catch (e) {
      reply = {error: e.message};
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
}

main();
