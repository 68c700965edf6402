"""``python -m mockstore`` is the ``mockstore`` command."""

import sys

from mockstore.cli import main

sys.exit(main())
