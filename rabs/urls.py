from __future__ import annotations

from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

admin.site.site_header = "RABS Brainframe"
admin.site.site_title = "RABS Brainframe"
admin.site.index_title = "Tools registry, policies and audit"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
]
