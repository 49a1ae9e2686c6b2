"""``python -m plda``: the command line (see :mod:`plda.cli`)."""

from plda.cli import main

raise SystemExit(main())
