"""``python -m qpcore``: the command line (see :mod:`qpcore.cli`)."""

from qpcore.cli import main

raise SystemExit(main())
