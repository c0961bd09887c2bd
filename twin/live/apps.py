from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "twin.live"
    label = "live"
    verbose_name = "Live push"
