"""ASGI entry point: ``controlplane.asgi:application`` serves HTTP and websockets.

HTTP goes to Django (static files through WhiteNoise); websockets (``/ws/...``) go to the
Channels consumers of the apps, behind the same authentication as the API.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

# Django must be set up before the routing modules import models and consumers.
django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from controlplane.routing import websocket_urlpatterns  # noqa: E402
from controlplane.ws_auth import websocket_auth_stack  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_application,
        "websocket": websocket_auth_stack(URLRouter(websocket_urlpatterns)),
    }
)
