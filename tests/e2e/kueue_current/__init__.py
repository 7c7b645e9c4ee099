"""The real-node tests that run beside Kueue v0.19.2 with the operator's Workload route: TAS
placement, the queue itself and MultiKueue, and Prometheus watching the operator (whose Kueue
panel needs a queued job).

They share one install of Kueue and of the operator's ``kueue-workloads`` component (the package
fixture in ``conftest.py``), made for the first of them and undone after the last: that install
and its removal took 50 to 90 s each time on a busy machine. The run keeps the modules together:
it orders them by their last background build (tests/helpers/late_builds.py), and theirs come
one after the other in the Makefile's LATE_BUILDS. Were another module ever put between them,
pytest would undo the install on leaving the package and make it again on coming back, which
costs time but is still right.
"""
