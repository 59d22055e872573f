"""Page-specific live sockets (``/ws/ui/...``); each module exports ``websocket_urlpatterns``."""
