"""The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) and the
operator (CRD, webhook, controller) run as processes of this machine."""
