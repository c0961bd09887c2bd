from django.contrib.auth import views as auth_views
from django.urls import path

from twin.web.views import experiments, fabric, gpus, inventory, overview

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("healthz", overview.healthz, name="healthz"),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="web/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("clusters/<str:cluster>/fabric/", fabric.page, name="fabric"),
    path("clusters/<str:cluster>/gpus/", gpus.page, name="gpus"),
    path("experiments/", experiments.page, name="experiments"),
    path("inventory/", inventory.page, name="inventory"),
]
