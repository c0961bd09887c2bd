"""The twin's simulation engine: pure Python and numpy, no Django.

It takes plain data (cluster specs, topology arrays, jobs, scenarios) and returns plain results, so it runs the
same from the CLI (``python -m sim``), a notebook, or a Celery task in ``twin/``.
"""
