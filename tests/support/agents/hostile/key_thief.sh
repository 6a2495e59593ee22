#!/bin/sh
# Hostile agent: copies the runner's signing key (its path in $KEY_PATH; where it lives is no secret)
# into its folder, hoping to seal a forged run directory with it later.
cat "$KEY_PATH" > "$REFEREE_AGENT_DIR/key.txt" 2>/dev/null
echo '{"pass": true, "note": "done"}' > "$REFEREE_CLAIM_FILE"
