"""``/metrics`` renders the client quota figures brokers publish (``weir.quotas`` snapshot rows
in ``BrokerMetrics``) under Kafka's JMX exporter names, per broker, user and client id."""

from __future__ import annotations

from controlplane.metrics import _quota_families
from weir.metrics import BrokerMetrics
from weir.quotas import QuotaEntity, QuotaKind, QuotaManager


def test_quota_rows_become_rate_throttle_limit_and_throttled_series() -> None:
    quotas = QuotaManager(window_num=11, window_size_s=1)
    quotas.update({QuotaEntity.of(client_id=None): {"producer_byte_rate": 100.0}})
    throttle = quotas.record(QuotaKind.PRODUCE, "ANONYMOUS", "app", 5_000, 0)
    quotas.throttled(QuotaKind.PRODUCE, "ANONYMOUS", "app", throttle, 0)
    snapshot = BrokerMetrics(client_quotas=quotas.snapshot).snapshot(broker_id=3, now_ms=0)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in _quota_families({3: snapshot}, None)
        for s in family.samples
    }
    tags = (("broker", "3"), ("client_id", "app"), ("user", ""))
    assert samples[("kafka_server_produce_byte_rate", tags)] == 500.0
    assert samples[("kafka_server_produce_throttle_time", tags)] == throttle
    with_type = tuple(sorted((*tags, ("type", "Produce"))))
    assert samples[("weir_client_quota_limit", with_type)] == 100.0
    assert samples[("weir_client_quota_throttled_requests_total", with_type)] == 1
