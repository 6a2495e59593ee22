#!/bin/sh
# Hostile agent: ignores SIGTERM, and so do its child and a grandchild in a session of its own that
# keeps stdout and stderr open; it never finishes by itself.
trap '' TERM
echo '{"pass": true, "note": "working on it"}' > "$REFEREE_CLAIM_FILE"
echo started
sh -c 'trap "" TERM; sleep 1000' &
setsid sh -c 'trap "" TERM; sleep 1000' &
while :; do sleep 1; done
