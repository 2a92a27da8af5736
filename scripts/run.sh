#!/usr/bin/env bash
# run.sh starts mynahd on its embedded defaults (embedded MQTT broker on
# 127.0.0.1:1883, the demo voice), speaks a greeting through it, and keeps
# it running in the foreground until Ctrl-C. `make run` calls it after
# setup and build.
#
# State lives in var/ of the project: var/mynahd.yaml (written once; edit
# it freely), var/voices/ (the demo voice is built there on first start).
# On a machine without a sound card the speech goes to var/speech.wav.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -x bin/mynahd ] || { echo "run: bin/mynahd is missing; run 'make build' first" >&2; exit 1; }
command -v mosquitto_pub >/dev/null || { echo "run: mosquitto_pub is missing; run scripts/setup.sh" >&2; exit 1; }

mkdir -p var/voices
# The generated cloning and style-vector kits sit next to the demo voice,
# so every engine can be tried (they are small and built in a second).
[ -f var/voices/mynah-clone/voice.json ] || bin/mynah voice demo --kind cloning --out var/voices/mynah-clone >/dev/null
[ -f var/voices/mynah-style/voice.json ] || bin/mynah voice demo --kind style --out var/voices/mynah-style >/dev/null
conf=var/mynahd.yaml
if [ ! -f "$conf" ]; then
  cat >"$conf" <<YAML
# mynahd configuration for 'make run' (see systemd/mynahd.yaml for every key)
node: mynah
voices:
  dir: $root/var/voices
onnx:
  optimized_dir: $root/var/optimized
cache:
  file: $root/var/cache.db
audio:
  # No sound card? Then the speech is written to this file.
  fallback: "wav:$root/var/speech.wav"
wyoming:
  # Home Assistant on this machine can use mynah as its TTS engine here
  # (Wyoming integration, host 127.0.0.1, port 10200).
  listen: 127.0.0.1:10200
YAML
fi
node=$(sed -n 's/^node: *//p' "$conf" | head -n1)
node=${node:-mynah}
greeting=${GREETING:-Hello! I am mynah. I speak offline, with a voice this project built itself.}

bin/mynahd -config "$conf" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

# Wait until mynahd says it is online (retained on its status topic).
for _ in $(seq 1 150); do
  kill -0 $pid 2>/dev/null || { wait $pid; exit $?; }
  if [ "$(mosquitto_sub -h 127.0.0.1 -p 1883 -t "mynah/$node/status" -C 1 -W 1 2>/dev/null)" = online ]; then
    break
  fi
  sleep 0.2
done
mosquitto_pub -h 127.0.0.1 -p 1883 -q 1 -t "mynah/$node/say" -m "$greeting"
cat >&2 <<MSG

mynahd is running (Ctrl-C stops it). Try, from another terminal:
  mosquitto_pub -t mynah/$node/say -m "The washing machine has finished."
  mosquitto_pub -t mynah/$node/say -m '{"text":"Dinner is ready.","speaker":"wren","priority":"alert"}'
  mosquitto_pub -t mynah/$node/say -m '{"text":"Hello from a style vector.","voice":"mynah-style","speaker":"iris"}'
  bin/mynah enroll --node $node --owner me --name you some-recording.wav   # 1-30 s of speech
  mosquitto_pub -t mynah/$node/u/me/say -m '{"text":"Now in your voice.","voice":"mynah-clone","speaker":"you"}'
  mosquitto_sub -v -t 'mynah/$node/#'
$(sed -n 's/^  listen: *\(.*:[0-9]*\)$/Home Assistant on this machine: add the Wyoming integration with host and port \1./p' "$conf" | head -n1)
MSG
wait $pid
