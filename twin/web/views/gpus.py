"""(placeholder until the gpus page lands)"""
from django.shortcuts import render
from django.urls import path

from twin.web.access import readable


@readable
def page(request, **kwargs):
    return render(request, "web/placeholder.html", {"nav": "gpus"})


urlpatterns = [
    path("clusters/<str:cluster>/gpus/", page, name="gpus"),
]
