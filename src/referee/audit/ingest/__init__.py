"""The auditor's first stage: which files to read, how they are cut and streamed, and the readers of each format."""
