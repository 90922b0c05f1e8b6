"""``python -m speedaudit``: the ``speedaudit`` command line (:func:`audits.cli.main`)."""

import sys

from audits.cli import main

if __name__ == "__main__":
    sys.exit(main())
