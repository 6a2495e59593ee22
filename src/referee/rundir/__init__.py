"""The run directory on disk: its schema (manifest, captures, claims), its seal and key, and a plan's runs folder."""
