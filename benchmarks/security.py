"""What TLS and SASL cost: produce/consume throughput on PLAINTEXT, SSL and SASL_SSL listeners.

One Weir broker (private Redis) is started with three listeners on 127.0.0.1:

- PLAINTEXT (the primary);
- SSL: PEM keystore for 127.0.0.1, no client authentication unless ``--client-auth``
  (then ``ssl.client.auth=required`` and the client presents a certificate);
- SASL_SSL: the same TLS, plus SCRAM-SHA-512 for a user written to the broker's Redis.

Certificates are generated into a temporary directory with
``tests.weir.security.tls_certs.make_tls_certs``. Each run produces then consumes
``--records`` values of ``--size`` bytes through each listener in turn with the same client
harness as ``benchmarks.throughput`` (confluent-kafka, acks=1, no compression, 1 partition);
the only difference between listeners is the client's security settings. Medians of
``--runs`` are reported with the SSL/PLAINTEXT and SASL_SSL/PLAINTEXT ratios.

    python -m benchmarks.security --runs 3
    python -m benchmarks.security --client-auth --json /tmp/security.json

Nothing is asserted: the figures are printed (and optionally written with ``--json``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.common import (
    benchmark_parser,
    create_topic,
    delete_topic,
    format_table,
    machine_note,
    parse_checked,
    print_results,
    settings_from,
)
from benchmarks.peers import HOST, PeerHandle, free_port, install_signal_handlers, start_weir
from benchmarks.throughput import (
    PeerSummary,
    ProduceSettings,
    RunResult,
    add_volume_arguments,
    check_volume,
    cpu_cells,
    median_cells,
    produce_then_consume,
    rate_cells,
    run_json,
    run_line,
    summary_rows,
)
from tests.weir.security.tls_certs import TlsCerts, make_tls_certs
from weir.metadata.redis_url import sync_client
from weir.security.credentials import encode_credential, scram_key
from weir.security.scram import credential_from_password

LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
MECHANISM = "SCRAM-SHA-512"
USER = "bench"
PASSWORD = "bench-secret"
SCRAM_ITERATIONS = 4096  # Kafka's default; only the login pays for it, not the data


def broker_configs(
    ssl_port: int, sasl_ssl_port: int, certs: TlsCerts, client_auth: bool
) -> list[str]:
    """``--config`` entries adding the SSL and SASL_SSL listeners to the PLAINTEXT one."""
    configs = [
        # Added to the PLAINTEXT listener that ``--listen`` opens (the primary).
        f"listeners=SSL://{HOST}:{ssl_port},SASL_SSL://{HOST}:{sasl_ssl_port}",
        f"ssl.keystore.location={certs.server_keystore}",
        f"ssl.truststore.location={certs.ca}",
        f"sasl.enabled.mechanisms={MECHANISM}",
    ]
    if client_auth:
        configs.append("listener.name.ssl.ssl.client.auth=required")
    return configs


def client_configs(certs: TlsCerts, client_auth: bool) -> dict[str, dict[str, Any]]:
    """confluent-kafka security settings per listener, laid over the throughput configs."""
    ssl: dict[str, Any] = {"security.protocol": "SSL", "ssl.ca.location": certs.ca}
    if client_auth:
        ssl["ssl.certificate.location"] = certs.writer.cert
        ssl["ssl.key.location"] = certs.writer.key
    return {
        "PLAINTEXT": {},
        "SSL": ssl,
        "SASL_SSL": {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": certs.ca,
            "sasl.mechanism": MECHANISM,
            "sasl.username": USER,
            "sasl.password": PASSWORD,
        },
    }


def add_scram_user(handle: PeerHandle) -> None:
    """Write the benchmark user's SCRAM credential into the broker's Redis."""
    client = sync_client(handle.env["WEIR_REDIS_URL"])
    try:
        credential = credential_from_password(MECHANISM, PASSWORD, SCRAM_ITERATIONS)
        client.hset(
            scram_key(handle.env["WEIR_CLUSTER_ID"], MECHANISM), USER, encode_credential(credential)
        )
    finally:
        client.close()


def run_once(
    handle: PeerHandle,
    listener: str,
    bootstrap: str,
    run: int,
    settings: ProduceSettings,
    client_config: dict[str, Any],
) -> RunResult:
    """One produce + consume through ``listener``; the topic is managed over PLAINTEXT."""
    plaintext = handle.bootstrap
    topic = f"bench-security-{listener.lower()}-{run}-{os.urandom(4).hex()}"
    create_topic(plaintext, topic, partitions=1)
    try:
        return produce_then_consume(
            listener, run, bootstrap, topic, settings, handle.cpu_seconds, client_config
        )
    finally:
        delete_topic(plaintext, topic)


def _medianpct(summary: PeerSummary, phase: str) -> str:
    """Median over runs of the broker's CPU % during ``phase``."""
    values = [
        100.0 * getattr(r, phase).broker_cpu_seconds / getattr(r, phase).seconds
        for r in summary.runs
        if getattr(r, phase).broker_cpu_seconds is not None and getattr(r, phase).seconds > 0
    ]
    return f"{statistics.median(values):.0f}%" if values else "-"


def report(
    summaries: list[PeerSummary], settings: ProduceSettings, client_auth: bool, machine: str
) -> str:
    """Per-run rows, a median row per listener, then the ratios to PLAINTEXT."""
    lines = [
        f"security: {settings.describe()}, "
        f"SSL client auth {'required' if client_auth else 'none'}, SASL {MECHANISM}, {machine}",
        "broker CPU: % of one core used during the phase (broker + its Redis).",
        "",
    ]
    headers = [
        "listener",
        "run",
        "prod MB/s",
        "prod msg/s",
        "cons MB/s",
        "cons msg/s",
        "broker CPU p/c",
    ]
    rows = summary_rows(
        summaries,
        lambda r: [
            *rate_cells(r.produce),
            *rate_cells(r.consume),
            cpu_cells(r, "broker_cpu_seconds"),
        ],
        lambda s: [
            *median_cells(s, "produce"),
            *median_cells(s, "consume"),
            f"{_medianpct(s, 'produce')}/{_medianpct(s, 'consume')}",
        ],
        median_from=1,
    )
    lines.append(format_table(headers, rows))
    by_listener = {s.peer: s for s in summaries if s.runs}
    base = by_listener.get("PLAINTEXT")
    if base is not None:
        lines.append("")
        for listener in ("SSL", "SASL_SSL"):
            other = by_listener.get(listener)
            if other is None:
                continue
            for phase in ("produce", "consume"):
                lines.append(f"{listener}/PLAINTEXT {phase}: {other.mb_ratio(base, phase)}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("security", __doc__)
    add_volume_arguments(parser, records=300_000, runs_of="listener")
    parser.add_argument(
        "--client-auth",
        action="store_true",
        help="require a client certificate on the SSL listener (ssl.client.auth=required)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="cap per phase, seconds")
    return parse_checked(parser, argv, check_volume)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_signal_handlers()
    machine = machine_note()
    settings = settings_from(ProduceSettings, args)
    summaries = [PeerSummary(listener, "started here") for listener in LISTENERS]
    with tempfile.TemporaryDirectory(prefix="weir-bench-security-") as tmp:
        workdir = Path(tmp)
        certs = make_tls_certs(workdir / "tls")
        ports = {"SSL": free_port(), "SASL_SSL": free_port()}
        with start_weir(
            free_port(),
            workdir / "data",
            extra_configs=broker_configs(ports["SSL"], ports["SASL_SSL"], certs, args.client_auth),
        ) as handle:
            add_scram_user(handle)
            bootstraps = {
                "PLAINTEXT": handle.bootstrap,
                **{name: f"{HOST}:{port}" for name, port in ports.items()},
            }
            configs = client_configs(certs, args.client_auth)
            # Listeners alternate within each run so drift (page cache, thermal) hits all alike.
            for run in range(1, args.runs + 1):
                for summary in summaries:
                    listener = summary.peer
                    result = run_once(
                        handle, listener, bootstraps[listener], run, settings, configs[listener]
                    )
                    summary.runs.append(result)
                    print(run_line(listener, result), flush=True)
    print_results(
        report(summaries, settings, args.client_auth, machine),
        args.json,
        {
            "settings": asdict(settings),
            "client_auth": args.client_auth,
            "mechanism": MECHANISM,
            "cpus": os.cpu_count(),
            "machine": machine,
            "listeners": [
                {"listener": s.peer, "runs": [run_json(r) for r in s.runs]} for s in summaries
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
