import sys

from loopgen.cli import main

sys.exit(main())
