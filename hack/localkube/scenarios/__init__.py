"""What a developer runs: the demos (``make demo``, ``make demo-node``, ``make demo-gang``), the
gang competition and the chaos run (``make chaos``)."""
