"""(placeholder until the gpus page lands)"""
from django.shortcuts import render

from twin.web.access import readable


@readable
def page(request, **kwargs):
    return render(request, "web/placeholder.html", {"nav": "gpus"})
