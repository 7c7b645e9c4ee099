"""The MXJob admission and conversion webhook.

Decisions are pure and framework-free: ``admission`` (mutate, validate) and
``conversion_review`` over the wire types of ``reviews``; ``answers`` turns a request body into
an HTTP answer. ``app`` is the thin Flask adapter (plus health and ``metrics``), ``serve`` runs
it under gunicorn over TLS (``tls``: TLS 1.2+, certificates reloaded when their files change),
configured by ``settings``. The rules themselves live in ``shared/``.
"""
