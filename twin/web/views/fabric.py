"""(placeholder until the fabric page lands)"""
from django.shortcuts import render
from django.urls import path

from twin.web.access import readable


@readable
def page(request, **kwargs):
    return render(request, "web/placeholder.html", {"nav": "fabric"})


urlpatterns = [
    path("clusters/<str:cluster>/fabric/", page, name="fabric"),
]
