"""Hostile or broken SASL traffic ends only that connection; the broker keeps serving.

Raw sockets speak the wire format directly: SaslHandshake v1, SaslAuthenticate v1 and
Metadata v1 are non-flexible, so the frames are a few ``struct.pack`` calls.
"""

from __future__ import annotations

import base64
import socket
import struct

import pytest
from confluent_kafka.admin import AdminClient

from tests.weir.clients.helpers import closed_by_peer, recv_exact
from tests.weir.security.conftest import SaslBroker, sasl_conf


def _frame(api_key: int, version: int, body: bytes, correlation: int = 1) -> bytes:
    client = b"raw-test"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _read_response(sock: socket.socket) -> bytes | None:
    """One response body (after the correlation id), or None if the broker closed."""
    try:
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
    except ConnectionError:
        return None
    return recv_exact(sock, size)[4:]


def _authenticate(sock: socket.socket, token: bytes) -> tuple[int, bytes]:
    sock.sendall(_frame(36, 1, _bytes(token), correlation=3))
    body = _read_response(sock)
    assert body is not None, "no SaslAuthenticate response"
    (error,) = struct.unpack_from(">h", body)
    (msg_len,) = struct.unpack_from(">h", body, 2)
    offset = 4 + max(msg_len, 0)
    (auth_len,) = struct.unpack_from(">i", body, offset)
    return error, body[offset + 4 : offset + 4 + auth_len]


def _connect_scram(broker: SaslBroker, mechanism: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.sasl_port), timeout=10)
    sock.sendall(_frame(17, 1, _string(mechanism), correlation=2))
    body = _read_response(sock)
    assert body is not None and struct.unpack_from(">h", body)[0] == 0
    return sock


def _still_serves(broker: SaslBroker) -> None:
    admin = AdminClient(sasl_conf(broker.sasl, "alice", "SCRAM-SHA-512"))
    assert admin.list_topics(timeout=10).brokers


def test_unauthenticated_metadata_on_the_sasl_listener_gets_no_answer(
    sasl_broker: SaslBroker,
) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(_frame(3, 1, struct.pack(">i", -1)))
        assert closed_by_peer(sock)
    _still_serves(sasl_broker)


def test_api_versions_is_served_before_authentication(sasl_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(_frame(18, 0, b""))
        body = _read_response(sock)
    assert body is not None and struct.unpack_from(">h", body)[0] == 0


@pytest.mark.parametrize(
    "token",
    [b"\xff\xfe garbage", b"n,,n=alice", b"p=tls-unique,,n=alice,r=abc", b""],
    ids=["not-utf8", "no-nonce", "channel-binding", "empty"],
)
def test_garbage_scram_token_fails_authentication_and_closes(
    sasl_broker: SaslBroker, token: bytes
) -> None:
    with _connect_scram(sasl_broker, "SCRAM-SHA-512") as sock:
        error, _ = _authenticate(sock, token)
        assert error == 58  # SASL_AUTHENTICATION_FAILED
        assert closed_by_peer(sock)
    _still_serves(sasl_broker)


def test_scram_nonce_mismatch_fails_and_closes(sasl_broker: SaslBroker) -> None:
    with _connect_scram(sasl_broker, "SCRAM-SHA-256") as sock:
        error, server_first = _authenticate(sock, b"n,,n=alice,r=clientnonce")
        assert error == 0 and server_first.startswith(b"r=clientnonce")
        proof = base64.b64encode(b"\0" * 32).decode()
        final = f"c=biws,r=clientnonce-forged,p={proof}".encode()
        error, _ = _authenticate(sock, final)
        assert error == 58
        assert closed_by_peer(sock)
    _still_serves(sasl_broker)


def test_oversized_token_closes_without_an_answer(sasl_broker: SaslBroker) -> None:
    with _connect_scram(sasl_broker, "SCRAM-SHA-512") as sock:
        sock.sendall(_frame(36, 1, _bytes(b"n,,n=alice,r=" + b"x" * 70_000), correlation=3))
        assert _read_response(sock) is None
    _still_serves(sasl_broker)


def test_garbage_frame_closes_the_connection(sasl_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", 6) + b"\x00\x24\xff\xff\xff\xff")
        assert closed_by_peer(sock)
    _still_serves(sasl_broker)


def test_unsupported_mechanism_is_refused(sasl_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(_frame(17, 1, _string("GSSAPI")))
        body = _read_response(sock)
        assert body is not None and struct.unpack_from(">h", body)[0] == 33
        assert closed_by_peer(sock)


def test_plain_handshake_v0_raw_tokens_authenticate(sasl_broker: SaslBroker) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(_frame(17, 0, _string("PLAIN")))
        body = _read_response(sock)
        assert body is not None and struct.unpack_from(">h", body)[0] == 0
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert recv_exact(sock, 4) == b"\0\0\0\0"  # empty server token: authenticated
        sock.sendall(_frame(3, 1, struct.pack(">i", -1), correlation=9))
        assert _read_response(sock) is not None  # Metadata is served now


def test_unauthenticated_frame_above_512_kb_closes_before_it_is_read(
    sasl_broker: SaslBroker,
) -> None:
    with socket.create_connection(("127.0.0.1", sasl_broker.sasl_port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", 600 * 1024) + b"\0" * 1024)
        assert closed_by_peer(sock)
    _still_serves(sasl_broker)


def test_authenticated_client_may_send_large_requests(sasl_broker: SaslBroker) -> None:
    from confluent_kafka import Producer

    producer = Producer({**sasl_conf(sasl_broker.sasl, "alice"), "compression.type": "none"})
    delivered: list[object] = []
    producer.produce(
        "sasl-large", value=b"x" * 900_000, on_delivery=lambda e, m: delivered.append(e)
    )
    assert producer.flush(15) == 0
    assert delivered == [None]
