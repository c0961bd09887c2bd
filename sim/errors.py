"""Errors the engine raises for input it refuses; each names the field, the value and the reason."""


class SpecError(ValueError):
    """A cluster spec (or catalog) that cannot be built.

    ``field`` is the dotted path in the spec (``backend.leaf.uplinks``), ``value`` what was given and ``reason``
    the limit it breaks, so a CLI or API can print one clear line.
    """

    def __init__(self, field: str, value, reason: str):
        self.field, self.value, self.reason = field, value, reason
        super().__init__(f"{field}: {value!r} {reason}")
