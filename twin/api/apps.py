from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API's shared parts: base viewset with bulk operations, fields, pagination, errors, hashed tokens,
    rate limits and failed-login lockouts; and the inventory's endpoints (twin/api/inventory), which prime the list counts
    after a build."""

    name = "twin.api"
    label = "api"

    def ready(self):
        from django.conf import settings

        from twin import env
        from twin.api import logins  # noqa: F401 - connects the failed-login counter
        from twin.inventory.signals import cluster_built
        from twin.api.throttling import parse_rate

        for name in ("TWIN_API_RATE_ANON", "TWIN_API_RATE_USER"):
            try:
                parse_rate(getattr(settings, name))
            except ValueError as e:
                raise env.SettingError(name, str(e)) from None

        cluster_built.connect(_prime, dispatch_uid="twin.inventory.priming")


def _prime(sender, cluster, **kwargs) -> None:
    """twin.api.inventory.priming.prime, imported when a cluster is built: it imports the inventory's API views, which
    every Django start (a command, beat, the launcher) would otherwise pay for."""
    from twin.api.inventory import priming

    priming.prime(sender, cluster, **kwargs)
