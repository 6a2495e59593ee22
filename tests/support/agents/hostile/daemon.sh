#!/bin/sh
# Hostile agent: in step `plant` it leaves a daemon (double fork + setsid, ignoring SIGHUP and SIGTERM)
# that ticks into ./ticks.log and keeps rewriting every other step's out.txt with "forged"; in any
# other step it writes out.txt "hello" and waits 1.5 s, long enough for a live daemon to spoil it.
if [ "$REFEREE_STEP_ID" = plant ]; then
  ( setsid sh -c '
      trap "" HUP TERM
      while :; do
        echo tick >> "$1"
        for f in "$2"/../*/out.txt; do echo forged > "$f" 2>/dev/null; done
        sleep 0.1
      done' daemon "$PWD/ticks.log" "$REFEREE_AGENT_DIR" </dev/null >/dev/null 2>&1 & )
  sleep 0.5
  echo '{"pass": true, "note": "planted nothing, promise"}' > "$REFEREE_CLAIM_FILE"
  exit 0
fi
echo hello > "$REFEREE_AGENT_DIR/out.txt"
sleep 1.5
echo '{"pass": true, "note": "said hello", "evidence": ["out.txt"]}' > "$REFEREE_CLAIM_FILE"
