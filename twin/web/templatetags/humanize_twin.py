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
def tbps(gbps):
    """A bandwidth given in Gb/s, in the unit engineers quote for fabrics: Tb/s from 10 Tb/s up
    (1,572,864 -> '1,573 Tb/s'), else Gb/s (3,200 -> '3,200 Gb/s')."""
    if not gbps:
        return "0"
    return f"{gbps / 1000:,.0f} Tb/s" if gbps >= 10_000 else f"{gbps:,.0f} Gb/s"
