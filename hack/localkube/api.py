"""A thin JSON client over the ``kubernetes`` package's connection handling.

Why not the generated API classes: tooling here works on plain dicts (pods whose status it writes,
objects from YAML) and needs the watch stream line by line; the generated models are slow and
lossy for that. The ``kubernetes`` package still does what it is good at: kubeconfig loading,
TLS and connection pooling.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubernetes import client, config


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, body: Any) -> None:
        self.status = status
        self.reason = reason
        self.body = body
        message = body.get("message") if isinstance(body, dict) else None
        super().__init__(f"{status} {reason}: {message or body}")


class Api:
    """JSON requests and watch streams against one API server."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.client = api_client

    @classmethod
    def from_kubeconfig(cls, path: Path | str) -> Api:
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(path), client_configuration=configuration
        )
        return cls(client.ApiClient(configuration))

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any,
        query: list[tuple[str, str]] | None,
        content_type: str,
        timeout: float | tuple[float, float],
    ) -> Any:
        serialized = self.client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        _, url, headers, payload, _ = serialized
        return self.client.call_api(
            method, url, header_params=headers, body=payload, _request_timeout=timeout
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise :class:`ApiError`."""
        response = self._send(
            method, path, body=body, query=query, content_type=content_type, timeout=timeout
        )
        data = response.read()
        try:
            decoded = json.loads(data) if data else None
        except ValueError:
            decoded = data.decode(errors="replace")
        if not 200 <= response.status <= 299:
            raise ApiError(response.status, response.reason or "", decoded)
        return decoded

    def watch(
        self, path: str, *, query: list[tuple[str, str]], timeout: float = 90
    ) -> Iterator[dict[str, Any]]:
        """Yield the events of one watch request until the server ends it."""
        response = self._send(
            "GET",
            path,
            body=None,
            query=[*query, ("watch", "true")],
            content_type="application/json",
            timeout=(10, timeout),
        )
        raw = response.response
        try:
            if not 200 <= response.status <= 299:
                data = raw.data
                raise ApiError(
                    response.status, response.reason or "", data.decode(errors="replace")
                )
            buffer = b""
            for chunk in raw.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            raw.release_conn()
