"""`python -m referee`: the command line, as the `referee` script runs it (the CLI's entry, not the library)."""

import sys

from referee.cli.main import forget_working_dir, main

forget_working_dir()  # the working directory is the agent's: nothing is imported from it after this
sys.exit(main())
