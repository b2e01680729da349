"""`python -m spotline_dev.asl`: see `spotline_dev.asl.build`."""

import sys

from spotline_dev.asl.build import main

sys.exit(main())
