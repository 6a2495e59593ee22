"""`python -m referee`: the command line, as the `referee` script runs it (this module is the CLI's entry point,
not the library)."""

import sys

from referee.cli.main import main

sys.exit(main())
