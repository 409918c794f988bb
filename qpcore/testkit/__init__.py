"""The test kit: planted problem generators, hypothesis strategies for the KKT property tests and
independent reference solutions. Imports nothing above qpcore; hypothesis is needed only by
:mod:`~qpcore.testkit.testing`."""
