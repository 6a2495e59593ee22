#!/bin/sh
# Hostile agent: finishes at once, but leaves a grandchild in a session of its own that holds stdout
# and stderr open: a runner that reads the agent's output from pipes waits for it forever.
echo "done quickly"
setsid sleep 1000 &
echo '{"pass": true, "note": "done"}' > "$REFEREE_CLAIM_FILE"
exit 0
