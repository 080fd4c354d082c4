"""``python -m plait``: the ``plait`` command line (see :mod:`plait.cli`)."""
from __future__ import annotations

import sys

from plait.cli import main
from plait.cli.doctor import doctor  # noqa: F401  (the report, importable from here too)

if __name__ == "__main__":
    sys.exit(main())
