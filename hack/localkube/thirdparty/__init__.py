"""Third-party components built from their release sources or pinned modules and run beside the
plane or on the real node: cert-manager, Kueue, Volcano, training-operator v1.8.1 and kwok."""
