#!/usr/bin/env python
"""Weir's command-line entry point (runbroker, topics, configs, ...).

``runbroker`` goes straight to the broker runtime (:mod:`weir.runbroker`), which imports no
Django; every other command is Django's.
"""

import os
import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "runbroker":
        from weir.runbroker import main as runbroker

        sys.exit(runbroker(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
