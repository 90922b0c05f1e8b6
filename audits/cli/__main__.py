"""``python -m audits.cli`` is the ``speedaudit`` command."""

import sys

from audits.cli import main

sys.exit(main())
