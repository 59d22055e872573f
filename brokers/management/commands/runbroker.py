"""``manage.py runbroker``: run one Weir broker in the foreground.

The broker runtime needs no Django: ``manage.py`` hands ``runbroker`` straight to
:mod:`weir.runbroker` before Django is imported. This command exists so that ``manage.py
help`` lists it and ``call_command("runbroker", ...)`` works; it takes the same flags.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from weir.runbroker import UsageError, add_arguments, run

FLAGS = ("broker_id", "listen", "data_dir", "advertise", "rack", "config")


class Command(BaseCommand):
    help = "Run one Weir broker (Kafka protocol listener) in the foreground."

    def add_arguments(self, parser: CommandParser) -> None:
        add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run(argparse.Namespace(**{flag: options[flag] for flag in FLAGS}))
        except UsageError as exc:
            raise CommandError(str(exc)) from None
