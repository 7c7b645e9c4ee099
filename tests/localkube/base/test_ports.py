from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from localkube.base.ports import (
    LOWEST_PORT,
    ephemeral_range,
    free_port,
    is_free,
    is_listened_on,
    listening_range,
    loopback_listeners,
    wait_released,
)


def test_the_kernels_ephemeral_range_is_read_from_its_file(tmp_path: Path) -> None:
    setting = tmp_path / "ip_local_port_range"
    setting.write_text("40000\t50000\n")
    assert ephemeral_range(setting) == (40000, 50000)


def test_an_unreadable_range_falls_back_to_linuxs_default(tmp_path: Path) -> None:
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)
    garbled = tmp_path / "garbled"
    garbled.write_text("not numbers")
    assert ephemeral_range(garbled) == (32768, 60999)


def test_listening_ports_lie_below_the_ephemeral_range() -> None:
    ports = listening_range((32768, 60999))
    assert ports.start == LOWEST_PORT
    assert ports.stop == 32768


def test_listening_ports_lie_above_it_when_it_starts_too_low() -> None:
    ports = listening_range((1024, 40000))
    assert ports.start == 40001
    assert ports.stop == 65536


def test_a_free_port_is_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = ephemeral_range()
    port = free_port()
    assert not low <= port <= high
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))


def test_a_port_is_not_given_out_twice_even_before_it_is_bound() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50


def test_a_port_something_listens_on_is_not_free() -> None:
    port = free_port()
    assert is_free(port)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert not is_free(port)


def test_a_listener_holds_its_port_and_time_wait_does_not() -> None:
    port = free_port()
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert is_listened_on(port)
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            accepted.close()  # the server side closes first: its end goes to TIME_WAIT
            client.recv(1)
    assert not is_listened_on(port)
    wait_released([port], timeout=0.1)


def test_waiting_for_a_port_still_listened_on_names_it() -> None:
    port = free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with pytest.raises(OSError, match=f"ports \\[{port}\\] are still listened on after 0.2 s"):
            wait_released([port], timeout=0.2)


def test_only_a_listener_in_the_way_of_an_address_counts_for_it() -> None:
    port = free_port()
    with socket.socket() as elsewhere:
        elsewhere.bind(("127.0.0.2", port))  # another loopback address: 127.0.0.1 stays free
        elsewhere.listen()
        assert is_listened_on(port)
        assert not is_listened_on(port, host="127.0.0.1")
        assert loopback_listeners(port) == []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert is_listened_on(port, host="127.0.0.1")
        (holder,) = loopback_listeners(port)
        assert holder.startswith(f"pid {os.getpid()}: ")
        assert "pytest" in holder or "python" in holder
