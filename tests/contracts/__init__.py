"""Contract suites, one per seam, each run against every implementation of its seam.

A suite is a class of tests (``LauncherContract``, ``TrackerContract``, ``MeasurerContract``;
for the study's storage, Optuna's own ``StorageTestCase``) that a ``test_*`` module subclasses
for each implementation, giving it a fixture that builds the implementation and reads back what
it did through the implementation's own reader. Runs that need a real service (a Docker daemon,
an MLflow server, PostgreSQL, a real engine process measured for seconds) are marked
``integration``; the others run at unit speed.
"""
