"""``python -m qpcore_cli``: the ``qpcore`` command line (see :mod:`qpcore_cli.main`)."""

from qpcore_cli.main import main

raise SystemExit(main())
