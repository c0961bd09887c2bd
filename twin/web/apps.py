from django.apps import AppConfig


class WebConfig(AppConfig):
    """Pages served to the browser (the frontend's HTML shells)."""

    name = "twin.web"
    label = "web"
