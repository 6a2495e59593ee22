#!/bin/sh
# A well-behaved agent that reports what it can do where it runs: its uid, whether its home and temp
# folder are usable, then saves out.txt and claims pass.
d="$REFEREE_AGENT_DIR"
id -u > "$d/uid.txt"
if echo x > "$HOME/.probe" && t=$(mktemp) && echo y > "$t"; then echo ok > "$d/home.txt"; fi
pwd > "$d/cwd.txt"
echo hello > "$d/out.txt"
echo '{"pass": true, "note": "said hello", "evidence": ["out.txt"]}' > "$REFEREE_CLAIM_FILE"
