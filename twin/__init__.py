"""The twin's Django project: inventory, simulation runs, live push and web pages around the ``sim`` engine."""
from twin.celery import app as celery_app

__all__ = ("celery_app",)
