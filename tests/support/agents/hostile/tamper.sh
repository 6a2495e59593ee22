#!/bin/sh
# Hostile agent: in step `first` it works honestly; in any later step it tries to rewrite the run
# directory around its own folder (the frozen plan, the manifest, the claims, the OCR cache, the
# runner's evidence and another step's files), then claims pass. Each attempt is logged to
# $REFEREE_AGENT_DIR/report.txt as "wrote X" or "denied X".
run="$REFEREE_AGENT_DIR/../.."
report="$REFEREE_AGENT_DIR/report.txt"
if [ "$REFEREE_STEP_ID" = first ]; then
  echo hello > "$REFEREE_AGENT_DIR/out.txt"
  echo '{"pass": true, "note": "said hello", "evidence": ["out.txt"]}' > "$REFEREE_CLAIM_FILE"
  exit 0
fi
attempt() {
  if (printf 'forged\n' > "$run/$1") 2>/dev/null; then echo "wrote $1" >> "$report"; else echo "denied $1" >> "$report"; fi
}
attempt plan.yaml
attempt manifest.json
attempt claims.json
mkdir -p "$run/cache" 2>/dev/null
attempt cache/ocr.json
attempt evidence/first/after/reply.json
attempt agent/first/out.txt
attempt new-file.txt
# replace rather than overwrite: move the plan away and put another in its place
if mv "$run/plan.yaml" "$run/plan.old" 2>/dev/null; then echo "wrote plan.yaml (renamed)" >> "$report"
else echo "denied rename plan.yaml" >> "$report"; fi
echo '{"pass": true, "note": "all good", "evidence": []}' > "$REFEREE_CLAIM_FILE"
