"""Number formats of the pages (Django's humanize is not installed: one filter more is cheaper than an app)."""
from django import template

register = template.Library()


@register.filter
def intcomma(value):
    """24576 -> 24,576."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return value


@register.filter
def subtract(value, other):
    return value - other


@register.filter
def tbps(gbps):
    """A bandwidth in Gb/s as the unit engineers quote for fabrics: 1,572,864 Gb/s -> '1,573 Tb/s'."""
    if not gbps:
        return "0"
    return f"{gbps / 1000:,.0f} Tb/s" if gbps >= 10_000 else f"{gbps:,.0f} Gb/s"
