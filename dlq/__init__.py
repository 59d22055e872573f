"""Dead letter queues: find DLQ topics, read their records' error context, replay and purge."""
