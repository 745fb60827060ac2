from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from broker.api.channel_views import appservice_other, appservice_transaction, appservice_user
from dashboard.data.metrics import metrics
from rabs.web.health import healthz, healthz_web
from rabs.web.signin import AdminSignInForm, SignInForm

admin.site.login_form = AdminSignInForm

urlpatterns = [
    path("", RedirectView.as_view(url="/board/", permanent=False)),
    path("board/", include("dashboard.urls")),
    path(
        "accounts/login/",
        LoginView.as_view(authentication_form=SignInForm),
        name="login",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
    path("healthz", healthz, name="healthz"),
    path("healthz/web", healthz_web, name="healthz-web"),
    path("api/v1/", include("broker.api.urls")),
    # The Matrix homeserver's application-service API (docs/channels.md).
    path("matrix/_matrix/app/v1/transactions/<str:txn_id>", appservice_transaction),
    path("matrix/_matrix/app/v1/users/<str:user_id>", appservice_user),
    re_path(r"^matrix/_matrix/app/v1/(?P<rest>.+)$", appservice_other),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    # Any other address under /api/ answers a JSON 404, like every API error (also in DEBUG).
    re_path(r"^api/", csrf_exempt(lambda request: api_not_found(request, Http404()))),
]


def api_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Under /api/, an unknown address answers JSON like every other API error."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"code": "not_found", "detail": f"no such endpoint: {request.path}"}, status=404
        )
    return page_not_found(request, exception)


handler404 = api_not_found

if settings.RABS_BENCH_ENDPOINTS:  # bench/broker_load.py only
    from rabs.web.bench_views import bare_insert  # a benchmark's endpoint: never loaded otherwise

    urlpatterns.append(path("bench/insert/", bare_insert))
