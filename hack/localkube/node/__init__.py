"""The real node: containerd, the kubelet, the CNI bridge, kube-proxy and CoreDNS, as on a cluster.

``localkube.node.realnode`` starts and tears down the whole node; the other modules each hold one
part (network, containerd, the components' configurations, teardown of the host).
"""
