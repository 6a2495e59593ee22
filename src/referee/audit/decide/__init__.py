"""The auditor's deciding stage, pure: task class, votes, policy and its files, disposition, and `decide` itself."""
