from django.apps import AppConfig


class WebConfig(AppConfig):
    """Pages served to the browser (the frontend's HTML shells)."""

    name = "twin.web"
    label = "web"

    def ready(self):
        from twin.inventory.signals import cluster_built
        from twin.web import warm

        cluster_built.connect(warm.on_cluster_built, dispatch_uid="twin.web.warm")
