"""The connection limits' bookkeeping (``weir.connection_limits``), without a socket.

``ConnectionQuotas`` is Kafka's ``ConnectionQuotas``: a slot check for the acceptor
(``max.connections``, per-listener limits, the protected inter-broker listener) and a per-ip
admission (``max.connections.per.ip`` and its overrides). ``RequestQueue`` is the
``queued.max.requests`` bound; ``is_idle`` the ``connections.max.idle.ms`` rule on a fake
clock. The listener that drives them is tested with real sockets in test_server_limits.py.
"""

from __future__ import annotations

import socket

import pytest

from weir.config import BrokerConfig, InvalidConfigError, check_broker_constraints
from weir.connection_limits import (
    PER_IP,
    ConnectionLimits,
    ConnectionQuotas,
    CurrentLimits,
    RequestQueue,
    apply_socket_buffers,
    is_idle,
    normalize_host,
    parse_ip_overrides,
)


def test_ip_overrides_parse_kafkas_csv_map_at_the_last_colon() -> None:
    assert parse_ip_overrides("") == {}
    assert parse_ip_overrides("hostName:100, 127.0.0.1 : 200,::1:3") == {
        "hostName": 100,
        "127.0.0.1": 200,
        "::1": 3,
    }
    for bad in ("127.0.0.1", "127.0.0.1:x", ":5", "a:1,,b:2"):
        with pytest.raises(ValueError, match="expected host:count"):
            parse_ip_overrides(bad)


def test_ip_overrides_config_is_validated_naming_the_key() -> None:
    config = BrokerConfig(
        broker_id=1, static={"max.connections.per.ip.overrides": "127.0.0.1:2, localhost:3"}
    )
    assert config.get("max.connections.per.ip.overrides") == "127.0.0.1:2, localhost:3"
    with pytest.raises(InvalidConfigError, match=r"max\.connections\.per\.ip\.overrides.*'a:b'"):
        BrokerConfig(broker_id=1, static={"max.connections.per.ip.overrides": "a:b"})


def test_zero_per_ip_needs_overrides_as_in_kafka() -> None:
    with pytest.raises(InvalidConfigError, match="can be set to zero only if"):
        check_broker_constraints(BrokerConfig(broker_id=1, static={"max.connections.per.ip": "0"}))
    check_broker_constraints(
        BrokerConfig(
            broker_id=1,
            static={
                "max.connections.per.ip": "0",
                "max.connections.per.ip.overrides": "127.0.0.1:5",
            },
        )
    )


def test_limits_from_config_resolve_hosts_and_read_listener_limits() -> None:
    config = BrokerConfig(
        broker_id=1,
        static={
            "max.connections": "10",
            "max.connections.per.ip": "3",
            "max.connections.per.ip.overrides": "db-host:7,::ffff:10.0.0.1:1",
            "listener.name.client.max.connections": "4",
        },
    )
    limits = ConnectionLimits.from_config(
        config,
        listeners=("CLIENT", "BROKER"),
        resolve=lambda host: {"10.1.1.1", "10.1.1.2"} if host == "db-host" else {host},
    )
    assert limits.max_connections == 10
    assert limits.per_listener == {"CLIENT": 4}
    assert limits.ip_limit("10.1.1.2") == 7
    assert limits.ip_limit("10.9.9.9") == 3


def test_current_limits_follow_a_new_config_object() -> None:
    configs = [BrokerConfig(broker_id=1)]
    current = CurrentLimits(lambda: configs[-1])
    first = current()
    assert current() is first  # same config: not rebuilt (no resolving per connection)
    configs.append(configs[0].with_dynamic(dynamic_default={"max.connections": "5"}))
    assert current().max_connections == 5


def test_normalize_host_counts_an_ipv4_mapped_peer_as_its_ipv4_address() -> None:
    assert normalize_host("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalize_host("0:0::1") == "::1"
    assert normalize_host("broker-1") == "broker-1"


def test_per_ip_limit_refuses_the_next_connection_until_one_closes() -> None:
    quotas = ConnectionQuotas(lambda: ConnectionLimits(per_ip=2))
    assert quotas.admit("PLAINTEXT", "10.0.0.1") is None
    assert quotas.admit("PLAINTEXT", "10.0.0.1") is None
    assert quotas.admit("PLAINTEXT", "10.0.0.1") == PER_IP
    assert quotas.admit("PLAINTEXT", "10.0.0.2") is None  # another address has its own count
    assert quotas.total == 3  # the refused one is not counted
    quotas.release("PLAINTEXT", "10.0.0.1")
    assert quotas.admit("PLAINTEXT", "::ffff:10.0.0.1") is None


def test_an_override_changes_one_address_limit() -> None:
    limits = ConnectionLimits(per_ip=0, per_ip_overrides={"127.0.0.1": 1})
    quotas = ConnectionQuotas(lambda: limits)
    assert quotas.admit("L", "10.0.0.1") == PER_IP
    assert quotas.admit("L", "127.0.0.1") is None
    assert quotas.admit("L", "127.0.0.1") == PER_IP


def test_max_connections_holds_the_acceptor_until_a_slot_frees() -> None:
    limits = [ConnectionLimits(max_connections=2)]
    quotas = ConnectionQuotas(lambda: limits[-1])
    woken: list[str] = []
    quotas.subscribe(lambda: woken.append("changed"))
    for address in ("10.0.0.1", "10.0.0.2"):
        assert quotas.slot_available("L")
        assert quotas.admit("L", address) is None
    assert not quotas.slot_available("L")
    quotas.release("L", "10.0.0.1")
    assert woken == ["changed"] and quotas.slot_available("L")
    assert quotas.admit("L", "10.0.0.3") is None
    limits.append(ConnectionLimits(max_connections=3))  # a dynamic raise
    assert quotas.slot_available("L")


def test_listener_limit_and_the_protected_inter_broker_listener() -> None:
    limits = ConnectionLimits(max_connections=2, per_listener={"BROKER": 3, "CLIENT": 5})
    quotas = ConnectionQuotas(lambda: limits, protected_listener="BROKER")
    assert quotas.admit("CLIENT", "10.0.0.1") is None
    assert quotas.admit("CLIENT", "10.0.0.2") is None
    assert not quotas.slot_available("CLIENT")
    # The inter-broker listener is not held back by max.connections, only by its own limit,
    # and while it holds the broker over the limit the other listeners shed connections.
    for n in range(3):
        assert quotas.slot_available("BROKER")
        assert quotas.admit("BROKER", f"10.0.1.{n}") is None
    assert not quotas.slot_available("BROKER")
    assert quotas.over_limit("CLIENT") and not quotas.over_limit("BROKER")


def test_unprotected_when_no_listener_is_named() -> None:
    quotas = ConnectionQuotas(lambda: ConnectionLimits(max_connections=1))
    assert quotas.admit("PLAINTEXT", "10.0.0.1") is None
    assert not quotas.slot_available("PLAINTEXT")
    assert not quotas.over_limit("PLAINTEXT")


def test_request_queue_wakes_its_waiters_once_below_the_bound() -> None:
    queue: RequestQueue[str] = RequestQueue(3)
    queue.add(2)
    assert not queue.full
    queue.add(2)
    assert queue.full
    queue.wait("a")
    queue.wait("b")
    assert not queue.remove(1)  # 3 queued: still at the bound
    assert queue.remove(1) == ["a", "b"]
    assert queue.waiting == 0
    queue.add(5)
    queue.wait("c")
    queue.forget("c")  # its own queue emptied: it reads again anyway
    assert not queue.remove(5)
    assert queue.count == 2


def test_idle_needs_the_full_time_and_no_request_in_flight() -> None:
    assert not is_idle(last_active=10.0, now=10.25, max_idle_s=0.5, busy=False)
    assert is_idle(last_active=10.0, now=10.5, max_idle_s=0.5, busy=False)
    assert not is_idle(last_active=10.0, now=1000.0, max_idle_s=0.5, busy=True)


def test_socket_buffers_are_set_unless_minus_one() -> None:
    with socket.socket() as default, socket.socket() as sized:
        before = default.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        apply_socket_buffers(default, send=-1, receive=-1)
        assert default.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == before
        apply_socket_buffers(sized, send=32 * 1024, receive=48 * 1024)
        # Linux reports twice the size asked for (its bookkeeping overhead).
        assert sized.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (32768, 65536)
        assert sized.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (49152, 98304)
