#!/usr/bin/env python
"""Django's command-line utility, printing a bad setting as one line instead of a traceback."""
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    from twin.env import SettingError

    try:
        execute_from_command_line(sys.argv)
    except SettingError as e:
        sys.exit(f"twin: {e}")
    except OperationalError as e:
        sys.exit(f"twin: DATABASE_URL: {str(e).strip().splitlines()[0]}")


if __name__ == "__main__":
    main()
