"""``python -m mockstore`` is the ``mockstore`` command."""

import sys

from mockstore.cli.main import main

sys.exit(main())
