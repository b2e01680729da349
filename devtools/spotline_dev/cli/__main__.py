"""`python -m spotline_dev.cli`: the `spotline` command."""

import sys

from spotline_dev.cli.entry import main

sys.exit(main())
