"""The real node: the kubelet, containerd with runc, the CNI bridge, kube-proxy and CoreDNS beside
the plane, running the operator's and the jobs' images as containers. Needs root."""
