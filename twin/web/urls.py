"""The browser pages. Each page module (twin/web/views/<page>.py) lists its own routes: its page and the JSON it
loads."""
from django.contrib.auth import views as auth_views
from django.urls import path

from twin.web.views import experiments, fabric, gpus, inventory, overview

urlpatterns = [
    *overview.urlpatterns,
    path("accounts/login/", auth_views.LoginView.as_view(template_name="web/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    *fabric.urlpatterns,
    *gpus.urlpatterns,
    *experiments.urlpatterns,
    *inventory.urlpatterns,
]
