"""The engine's command line, ``python -m sim COMMAND ...`` (contract).

Each capability package of :mod:`sim` names its commands in its ``__init__`` (``COMMANDS``: command -> one-line
help) and implements them in its ``cli`` module (``add_parsers(sub)``, ``run(args, bar) -> exit status``, optionally
``rewrite(argv)`` for spelling aliases such as ``debug analyze``). This module finds the packages (their
``__init__`` only, which import nothing), and imports the ``cli`` module of the chosen command's package alone, so
a command costs the start-up of its own capability, not of all of them. Adding a capability's command needs no edit
here.

Refused requests (a blank option, a parameter out of range, more GPUs than usable, an unknown preset, a spec that
cannot be built, a flow with no path, an output folder that cannot be written) end with one line per reason on
stderr and exit status 2. Progress goes to stderr as a bar (:class:`sim.core.progress.Bar`) drawn from the engine's own fractions,
the ones a run on Celery publishes (``--quiet`` silences it).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import sim
from sim.core.errors import ParamError, SpecError, UsageError
from sim.core.progress import Bar

EXIT_USAGE = 2


def given_text(text: str) -> str:
    """An option's text must say something: a blank ``--preset ''`` or ``--routing ''`` would otherwise be read as
    "not given" and run the default, silently."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be blank")
    return text


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line with exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _CommandParser(_Parser):
    """A command's parser: every text option and argument (declared without a type, whichever capability declared
    it) is read with :func:`given_text`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("type", None, given_text)


def commands() -> dict[str, tuple[str, str]]:
    """Every command of every capability package: name -> (package, one-line help), in package order."""
    found = {}
    for info in sorted(pkgutil.iter_modules(sim.__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        package = f"sim.{info.name}"
        for name, help_text in getattr(importlib.import_module(package), "COMMANDS", {}).items():
            found[name] = (package, help_text)
    return found


def build_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str], object | None]:
    """The parser with the chosen command's package's full parsers, the other commands as names only (for --help
    and for the error that names the choices); argv as that package rewrites it; the package's cli module."""
    table = commands()
    p = _Parser(prog="python -m sim", description="The cluster twin's simulation engine.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    chosen = table.get(argv[0])[0] if argv and argv[0] in table else None
    module = importlib.import_module(f"{chosen}.cli") if chosen else None
    if module is not None and hasattr(module, "rewrite"):
        argv = module.rewrite(argv)
    for name, (package, help_text) in table.items():
        if package == chosen:
            if name not in sub.choices:
                module.add_parsers(sub)
        else:
            sub.add_parser(name, help=help_text)
    return p, argv, module


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, argv, module = build_parser(argv)
    args = parser.parse_args(argv)
    bar = Bar(enabled=not args.quiet)
    try:
        return module.run(args, bar)
    except ParamError as e:
        return _refuse(args, bar, [f"{field}: {reason}" for field, reasons in e.errors.items() for reason in reasons])
    except (UsageError, SpecError, ValueError) as e:
        # NoPathError, CollectiveError and placement errors are ValueErrors with a readable message.
        return _refuse(args, bar, [str(e)])
    except RecursionError:
        return _refuse(args, bar, ["the input is nested too deeply to read"])
    except OSError as e:                        # a name the system refuses (too long, a device): the file named
        name = str(e.filename or "a file")
        return _refuse(args, bar, [f"{name if len(name) <= 80 else name[:77] + '...'}: {e.strerror or e}"])
    finally:
        bar.close()


def _refuse(args, bar: Bar, reasons: list[str]) -> int:
    bar.close()
    bar.enabled = False
    for reason in reasons:
        print(f"python -m sim {args.command}: error: {reason}", file=sys.stderr)
    return EXIT_USAGE
