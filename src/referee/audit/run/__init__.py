"""Running an audit: one trace through the stages (pipeline), many on workers, the cache, resume and the output file."""
