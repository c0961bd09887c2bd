"""A capability that exists only for the tests: one package, touching no shared file, that adds a run kind with a
live section, a result view, a GPU-page colour mode and a page (docs/architecture.md, "Adding a capability").

The twin finds it when ``TWIN_EXTRA_CAPABILITIES=tests.example_capability`` (twin/discovery.py), as it finds the
packages under twin/capabilities; its browser file is in its own ``static/`` folder (twin/web/static_finder.py).
"""

# Its browser module (a static path): the "example" result view and the "example" GPU colour mode.
BROWSER = ("js/capabilities/example.js",)
