"""The test kubelet: a node without containers that runs pods in manual mode (a test writes their
status) or in exec mode (each pod's ``mxnet`` container as a local process)."""
