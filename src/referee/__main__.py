"""`python -m referee`: the command line, as the `referee` script runs it (the CLI's entry, not the library)."""

import sys

from referee.cli.main import main

sys.exit(main())
