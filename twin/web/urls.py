from django.urls import path

from twin.web import views

urlpatterns = [path("", views.overview, name="overview")]
