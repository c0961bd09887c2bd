"""Log in and out: Django's session views (no navigation entry; the header links to them)."""
from django.contrib.auth import views as auth_views
from django.urls import path

from twin.web.nav import Page

PAGE = Page(urlpatterns=[
    path("accounts/login/", auth_views.LoginView.as_view(template_name="web/login.html"), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
])
