"""The auditor: report-isolated, evidence-first, replayable judgment of finished agent runs."""
