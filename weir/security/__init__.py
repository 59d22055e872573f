"""Security: SASL authentication, TLS listeners and Kafka ACLs (issue 8)."""
