"""The test kubelet: a node without containers that runs pods in manual mode (a test writes their
status) or in exec mode (each pod's ``mxnet`` container as a local process).

:mod:`.core` is the node (``TestKubelet``) and holds the rest: :mod:`.kubeapi` (its API calls),
:mod:`.podstatus` and :mod:`.transitions` (the statuses it writes), :mod:`.podlogs` with
:mod:`.logserver`, :mod:`.crilog` and :mod:`.tls` (``kubectl logs``), :mod:`.execpods` and
:mod:`.execs` with :mod:`.podenv` and :mod:`.hostsfile` (exec mode), :mod:`.profile` (the
install profile). :mod:`.daemon` runs one as a background process.
"""
