from django.apps import AppConfig


class DlqConfig(AppConfig):
    name = "dlq"
    verbose_name = "Dead letter queues"

    def ready(self) -> None:
        # A bad WEIR_DLQ_TOPIC_PATTERN stops the process at start with a message naming it,
        # not at the first request.
        from dlq.selectors import topic_pattern

        topic_pattern()
