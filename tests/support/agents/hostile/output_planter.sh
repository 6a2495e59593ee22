#!/bin/sh
# Hostile agent: plants stdout.txt in its folder as a link to a file outside (hoping the runner writes
# through it) and stderr.txt as a folder, then writes 3 MiB and "END" to stdout and one line to stderr.
ln -s "$PWD/victim.txt" "$REFEREE_AGENT_DIR/stdout.txt"
mkdir "$REFEREE_AGENT_DIR/stderr.txt"
head -c 3145728 /dev/zero | tr '\0' 'x'
echo END
echo "a line on stderr" >&2
echo '{"pass": true, "note": "done"}' > "$REFEREE_CLAIM_FILE"
