"""``python -m audits`` is the ``speedaudit`` command."""

import sys

from audits.cli import main

sys.exit(main())
