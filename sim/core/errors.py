"""Errors the engine raises for input it refuses; each names the field, the value and the reason."""
import reprlib

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 120, 120     # any value, however nested, in one short line


class SpecError(ValueError):
    """A cluster spec (or catalog) that cannot be built.

    ``field`` is the dotted path in the spec (``backend.leaf.uplinks``), ``value`` what was given and ``reason``
    the limit it breaks, so a CLI or API can print one clear line.
    """

    def __init__(self, field: str, value, reason: str):
        self.field, self.value, self.reason = field, value, reason
        super().__init__(f"{field}: {_SHORT.repr(value)} {reason}")


class ParamError(ValueError):
    """Parameters of a simulation that are refused: ``errors`` maps each bad field to its reasons.

    The CLI prints one line per field and exits with status 2; the API answers 400 with the same mapping, so a
    parameter is refused for the same reason wherever it comes from (:mod:`sim.core.params`).
    """

    def __init__(self, errors: dict[str, list[str]] | str, message: str | None = None):
        if isinstance(errors, str):             # ParamError("field", "reason")
            errors = {errors: [message or "invalid"]}
        self.errors = {k: list(v) for k, v in errors.items()}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))


class UsageError(ValueError):
    """A request the engine refuses that is not one parameter's fault (bad file, impossible combination):
    printed by the CLI as one line, exit status 2."""
