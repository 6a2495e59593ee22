"""The auditor's last stage: audit records shown to people, summarised, replayed under another policy, and for CI."""
